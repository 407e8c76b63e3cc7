package query

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// opCase is one expression evaluated against one document: the result
// it must give (its Go type included), or the error it must wrap.
type opCase struct {
	name string
	expr any // Go values, or a string of extended JSON (ej)
	doc  any // nil: {}; a string: extended JSON
	want any // Missing for a missing result
	err  error
}

// ej parses relaxed extended JSON (numbers as int32, int64 and float64,
// {"$numberDecimal": ...}, {"$date": ...}, {"$oid": ...}) into ttldb's
// values: Documents, []any, time.Time.
func ej(s string) any {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+s+`}`), false, &d); err != nil {
		panic(fmt.Sprintf("bad extended JSON %s: %v", s, err))
	}
	v, err := codec.ExprValue(d[0].Value)
	if err != nil {
		panic(err)
	}
	return fromDriver(v)
}

func fromDriver(v any) any {
	switch x := v.(type) {
	case bson.DateTime:
		return x.Time().UTC()
	case map[string]any:
		for k, e := range x {
			x[k] = fromDriver(e)
		}
	case []any:
		for i, e := range x {
			x[i] = fromDriver(e)
		}
	}
	return v
}

func dec128(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

func isoDate(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func opEval(t *testing.T, expr, doc any) (any, error) {
	t.Helper()
	if s, ok := expr.(string); ok {
		expr = ej(s)
	}
	var d codec.Document
	switch x := doc.(type) {
	case nil:
		d = codec.Document{}
	case string:
		d = ej(x).(codec.Document)
	case codec.Document:
		d = x
	}
	e, err := CompileExprWith(expr, &ExprOptions{Now: isoDate("2024-01-02T03:04:05.678Z")})
	if err != nil {
		return nil, err
	}
	return e.Evaluate(&Env{Root: d, Current: d})
}

func runOpCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		name := tc.name
		if name == "" {
			name = fmt.Sprint(tc.expr)
		}
		t.Run(name, func(t *testing.T) {
			got, err := opEval(t, tc.expr, tc.doc)
			if tc.err != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, tc.err), "error %v does not wrap %v", err, tc.err)
				return
			}
			require.NoError(t, err)
			assertSameValue(t, tc.want, got)
		})
	}
}

// assertSameValue checks got is want, of the same Go type throughout;
// decimals are compared by value, NaN equals NaN.
func assertSameValue(t *testing.T, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case bson.Decimal128:
		g, ok := got.(bson.Decimal128)
		require.True(t, ok, "want decimal %v, got %T %v", w, got, got)
		assert.True(t, Equal(w, g) || w.IsNaN() && g.IsNaN(), "want %v, got %v", w, g)
		return
	case float64:
		g, ok := got.(float64)
		require.True(t, ok, "want double %v, got %T %v", w, got, got)
		if math.IsNaN(w) {
			assert.True(t, math.IsNaN(g), "want NaN, got %v", g)
			return
		}
		assert.Equal(t, w, g)
		return
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "want array %v, got %T %v", w, got, got)
		require.Len(t, g, len(w), "got %v", g)
		for i := range w {
			assertSameValue(t, w[i], g[i])
		}
		return
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "want document %v, got %T %v", w, got, got)
		require.Len(t, g, len(w), "got %v", g)
		for k := range w {
			gv, ok := g[k]
			require.True(t, ok, "field %q missing from %v", k, g)
			assertSameValue(t, w[k], gv)
		}
		return
	}
	assert.Equal(t, want, got)
}

func TestNumberValue(t *testing.T) {
	for _, tc := range []struct{ in, want any }{
		{int8(1), int32(1)}, {int16(1), int32(1)}, {uint8(1), int32(1)}, {uint16(1), int32(1)},
		{int32(1), int32(1)}, {1, int64(1)}, {int64(1), int64(1)}, {uint32(1), int64(1)},
		{uint64(math.MaxUint64), float64(math.MaxUint64)}, {float32(1.5), 1.5}, {dec128("1.5"), dec128("1.5")},
	} {
		got, ok := NumberValue(tc.in)
		require.True(t, ok)
		assert.Equal(t, tc.want, got, "%T %v", tc.in, tc.in)
	}
	_, ok := NumberValue("1")
	assert.False(t, ok)
}

func TestAddTyping(t *testing.T) {
	for _, tc := range []struct{ a, b, want any }{
		{int32(1), int32(2), int32(3)},
		{int32(math.MaxInt32), int32(1), int64(math.MaxInt32 + 1)}, // int overflows to long
		{int64(math.MaxInt64), int64(1), float64(math.MaxInt64) + 1},
		{int32(1), int64(2), int64(3)},
		{int32(1), 2.5, 3.5},
		{int64(1), dec128("0.1"), dec128("1.1")},
		{dec128("0.2"), 0.1, dec128("0.3")},                                  // an added double converts by its 15 digits
		{0.1, dec128("0.2"), dec128("0.3000000000000000055511151231257827")}, // a running total by its 34
		{7, int8(1), int64(8)},
	} {
		got, err := Add(tc.a, tc.b)
		require.NoError(t, err)
		assertSameValue(t, tc.want, got)
	}
	_, err := Add("a", 1)
	assert.ErrorIs(t, err, errs.ErrExpression)
	got, err := Multiply(int64(math.MaxInt64), int32(2))
	require.NoError(t, err)
	assert.Equal(t, float64(math.MaxInt64)*2, got)
	got, err = Subtract(int32(math.MinInt32), int32(1))
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt32-1), got)
	got, err = Divide(int32(1), int32(4))
	require.NoError(t, err)
	assert.Equal(t, 0.25, got)
	_, err = Divide(int32(1), 0.0)
	assert.ErrorIs(t, err, errs.ErrExpression)
}

func TestDecimalRounding(t *testing.T) {
	// 1/3 to 34 digits; 2/3 rounds its last digit up.
	got, err := Divide(dec128("1"), dec128("3"))
	require.NoError(t, err)
	assert.Equal(t, "0.3333333333333333333333333333333333", got.(bson.Decimal128).String())
	got, err = Divide(dec128("2"), int32(3))
	require.NoError(t, err)
	assert.Equal(t, "0.6666666666666666666666666666666667", got.(bson.Decimal128).String())
	// Half to even at the 35th digit.
	got, err = Add(dec128("1000000000000000000000000000000000"), dec128("0.5"))
	require.NoError(t, err)
	assert.Equal(t, "1000000000000000000000000000000000", got.(bson.Decimal128).String())
	got, err = Add(dec128("1000000000000000000000000000000001"), dec128("0.5"))
	require.NoError(t, err)
	assert.Equal(t, "1000000000000000000000000000000002", got.(bson.Decimal128).String())
	got, err = Multiply(dec128("1.5"), int32(2))
	require.NoError(t, err)
	assert.Equal(t, "3.0", got.(bson.Decimal128).String())
}

// TestDecimalScale checks decimal results carry the exponent IEEE 754's
// decimal arithmetic (the server's Decimal128) gives them, trailing
// zeros included.
func TestDecimalScale(t *testing.T) {
	for _, tc := range []struct {
		expr any
		want string
	}{
		{`{"$add": [{"$numberDecimal": "1.0"}, {"$numberDecimal": "2.00"}]}`, "3.00"},
		{`{"$subtract": [{"$numberDecimal": "5.5"}, {"$numberDecimal": "0.5"}]}`, "5.0"},
		{`{"$multiply": [{"$numberDecimal": "1.10"}, {"$numberDecimal": "2.0"}]}`, "2.200"},
		{`{"$divide": [{"$numberDecimal": "1"}, {"$numberDecimal": "8"}]}`, "0.125"},
		{`{"$divide": [{"$numberDecimal": "1.00"}, 2]}`, "0.50"},
		{`{"$divide": [{"$numberDecimal": "10"}, 2]}`, "5"},
		{`{"$divide": [1, {"$numberDecimal": "1E-3"}]}`, "1E+3"},
		{`{"$divide": [{"$numberDecimal": "2"}, 3]}`, "0.6666666666666666666666666666666667"},
		{`{"$mod": [{"$numberDecimal": "7.50"}, 2]}`, "1.50"},
		{`{"$abs": {"$numberDecimal": "-1.50"}}`, "1.50"},
		{`{"$ceil": {"$numberDecimal": "1.50"}}`, "2"},
		{`{"$floor": {"$numberDecimal": "-1.5"}}`, "-2"},
		{`{"$ceil": {"$numberDecimal": "1E+2"}}`, "100"},
		{`{"$round": [{"$numberDecimal": "5"}, 2]}`, "5.00"},
		{`{"$round": [{"$numberDecimal": "1.2345"}, 3]}`, "1.234"},
		{`{"$round": [{"$numberDecimal": "1.2355"}, 3]}`, "1.236"},
		{`{"$trunc": [{"$numberDecimal": "-1.99"}, 1]}`, "-1.9"},
		{`{"$round": [{"$numberDecimal": "1250"}, -2]}`, "1.2E+3"},
		{`{"$sqrt": {"$numberDecimal": "2.25"}}`, "1.5"},
		{`{"$sqrt": {"$numberDecimal": "0.04"}}`, "0.2"},
		{`{"$sqrt": {"$numberDecimal": "4E+2"}}`, "2E+1"},
		{`{"$sqrt": {"$numberDecimal": "2"}}`, "1.414213562373095048801688724209698"},
		{`{"$exp": {"$numberDecimal": "1"}}`, "2.718281828459045235360287471352662"},
		{`{"$exp": {"$numberDecimal": "0"}}`, "1"},
		{`{"$exp": {"$numberDecimal": "100000"}}`, "Infinity"},
		{`{"$ln": {"$numberDecimal": "2"}}`, "0.6931471805599453094172321214581766"},
		{`{"$ln": {"$numberDecimal": "10"}}`, "2.302585092994045684017991454684364"},
		{`{"$ln": {"$numberDecimal": "1"}}`, "0"},
		{`{"$log10": {"$numberDecimal": "2"}}`, "0.3010299956639811952137388947244930"},
		{`{"$log10": {"$numberDecimal": "1000"}}`, "3"},
		{`{"$log10": {"$numberDecimal": "0.001"}}`, "-3"},
		{`{"$log": [{"$numberDecimal": "8"}, 2]}`, "3"},
		{`{"$pow": [{"$numberDecimal": "2"}, {"$numberDecimal": "0.5"}]}`, "1.414213562373095048801688724209698"},
		{`{"$pow": [{"$numberDecimal": "2"}, 10]}`, "1024"},
		{`{"$pow": [{"$numberDecimal": "1.1"}, 2]}`, "1.21"},
		{`{"$pow": [{"$numberDecimal": "-2"}, 3]}`, "-8"},
		{`{"$pow": [{"$numberDecimal": "-2"}, 0.5]}`, "NaN"},
		{`{"$pow": [{"$numberDecimal": "10"}, -2]}`, "0.01"},
		{`{"$pow": [{"$numberDecimal": "0"}, 2]}`, "0"},
		{`{"$pow": [{"$numberDecimal": "7"}, 0]}`, "1"},
		{`{"$pow": [{"$numberDecimal": "-10"}, 7000]}`, "Infinity"},
		{`{"$pow": [{"$numberDecimal": "-10"}, 7001]}`, "-Infinity"},
		{`{"$pow": [{"$numberDecimal": "1E-6000"}, 1000000]}`, "0E-6176"},
		{`{"$pow": [{"$numberDecimal": "3E+6000"}, -1000000]}`, "0E-6176"},
		{`{"$pow": [{"$numberDecimal": "0.320"}, 19]}`, "3.961408125713216879677197516800000E-10"},
		{`{"$pow": [{"$numberDecimal": "4.9E+3"}, 1]}`, "4.9E+3"},
		{`{"$toDecimal": 2.5}`, "2.50000000000000"},
		{`{"$toDecimal": 0.1}`, "0.100000000000000"},
		{`{"$toDecimal": 5}`, "5"},
		{`{"$add": [0.1, {"$numberDecimal": "0.2"}]}`, "0.3000000000000000055511151231257827"},
		{`{"$add": [{"$numberDecimal": "0.2"}, 0.1]}`, "0.300000000000000"},
		{`{"$multiply": [{"$numberDecimal": "1E+6000"}, {"$numberDecimal": "1E+200"}]}`, "Infinity"},
		{`{"$multiply": [{"$numberDecimal": "-1E+6000"}, {"$numberDecimal": "1E+200"}]}`, "-Infinity"},
		{`{"$multiply": [{"$numberDecimal": "1E+6100"}, {"$numberDecimal": "1E+20"}]}`, "1.000000000E+6120"},
		{`{"$multiply": [{"$numberDecimal": "1E-6176"}, {"$numberDecimal": "1E-10"}]}`, "0E-6176"},
		{`{"$add": [{"$numberDecimal": "1E+40"}, {"$numberDecimal": "1E-40"}]}`, "1.000000000000000000000000000000000E+40"},
		{`{"$add": [{"$numberDecimal": "1E+6111"}, {"$numberDecimal": "1E-6176"}]}`, "1.000000000000000000000000000000000E+6111"},
		{`{"$subtract": [{"$numberDecimal": "1E+6111"}, {"$numberDecimal": "1E-6176"}]}`, "1.000000000000000000000000000000000E+6111"},
		{`{"$add": [{"$numberDecimal": "0E-6176"}, {"$numberDecimal": "1E+6111"}]}`, "1.000000000000000000000000000000000E+6111"},
		{`{"$add": [{"$numberDecimal": "9999999999999999999999999999999999"}, {"$numberDecimal": "0.5"}]}`, "1.000000000000000000000000000000000E+34"},
		{`{"$add": [{"$numberDecimal": "9999999999999999999999999999999998"}, {"$numberDecimal": "0.5"}]}`, "9999999999999999999999999999999998"},
		{`{"$add": [{"$numberDecimal": "9999999999999999999999999999999998"}, {"$numberDecimal": "0.5000000000000000000000000000000001"}]}`, "9999999999999999999999999999999999"},
	} {
		got, err := opEval(t, tc.expr, nil)
		require.NoError(t, err, "%v", tc.expr)
		d, ok := got.(bson.Decimal128)
		require.True(t, ok, "%v gave %T %v", tc.expr, got, got)
		assert.Equal(t, tc.want, d.String(), "%v", tc.expr)
	}
}

// TestDecimalArithmeticReference checks Add, Subtract, Multiply, Divide
// and $mod on decimals against results of the General Decimal
// Arithmetic specification (IEEE 754-2008) in Decimal128's context: 34
// digits, half to even, exponents -6176 to 6111 (clamped), the remainder
// truncated. Exponents are part of the expected strings.
func TestDecimalArithmeticReference(t *testing.T) {
	for _, tc := range []struct{ op, a, b, want string }{
		{"Add", "5E+25", "3E+2", "5.00000000000000000000003E+25"},
		{"Subtract", "-8064375628938941770246815167110.934", "9.999999999999999999999999999999999E+55", "-1.000000000000000000000000080643756E+56"},
		{"Multiply", "-5.4036366517555725065E+44", "117.52", "-6.35035379314314880963880E+46"},
		{"Divide", "-7382071983286002690961647934802.461", "1209328153120814619241938963947.301", "-6.104275307108075730033397916110954"},
		{"mod", "0.009", "0.07", "0.009"},
		{"Add", "7.1846E+28", "-40629531937798453208", "71845999959370468062201546792"},
		{"Subtract", "-543004500962495603220033305670769.8", "61181524801635875.044", "-543004500962495664401558107306644.8"},
		{"Multiply", "-87.48407438317794426580958051060161", "2022985336660536585.6", "-176978999668488658115.7988529238234"},
		{"Divide", "-1.0", "9999999999999999999999999999999999", "-1.000000000000000000000000000000000E-34"},
		{"mod", "-9.864692667859757211581663844515786E+35", "9096866552811692871783968081929157", "-4007679082312891005497831603229644"},
		{"Add", "0.17", "76526987432531903108", "76526987432531903108.17"},
		{"Subtract", "-1354605901260321219", "49488823101212333.366", "-1404094724361533552.366"},
		{"Multiply", "1598045564822257053461385320396.521", "-96537834689032153.995", "-1.542718585623520686440205183345564E+47"},
		{"Divide", "0.005", "6.1", "0.0008196721311475409836065573770491803"},
		{"mod", "6.6", "490.000", "6.600"},
		{"Add", "2289700.00", "6.8070E+6", "9096700.00"},
		{"Subtract", "12394", "61435814079999196035", "-61435814079999183641"},
		{"Multiply", "-4.5E+3", "-7.801403513285333662165162695366922E+35", "3.510631580978400147974323212915115E+39"},
		{"Divide", "-878.58", "941897.34413882404641000", "-0.0009327768099858960307678139264179242"},
		{"mod", "1000", "3.637829015304496738391045262461037E+35", "1000"},
		{"Add", "3282217111753072132517364036736.084", "-0.005", "3282217111753072132517364036736.079"},
		{"Subtract", "-7553", "379.52", "-7932.52"},
		{"Multiply", "-767.56", "-10", "7675.60"},
		{"Divide", "78243", "4.5", "17387.33333333333333333333333333333"},
		{"mod", "9.90E+31", "1.93570E+7", "5.6730E+6"},
		{"Add", "-4.12540E+7", "6573508409711798497075368009306164", "6573508409711798497075367968052164"},
		{"Subtract", "3E-12", "9.5E+12", "-9499999999999.999999999997"},
		{"Multiply", "7.1", "-822274724116574489.18", "-5838150541227678873.178"},
		{"Divide", "5.4426056257628282204E+45", "-2.000E+32", "-27213028128814.141102"},
		{"mod", "0.00", "-30654240771908059031", "0.00"},
		{"Add", "4.6992902770991265311E+54", "3700.0", "4.699290277099126531100000000000000E+54"},
		{"Subtract", "9.5E+38", "9217487900682643164.00", "9.499999999999999999907825120993174E+38"},
		{"Multiply", "3E+25", "-5.000E+5", "-1.5000E+31"},
		{"Divide", "-9075832209087525155295757586649.756", "848750000", "-10693174914977938327299.86166321032"},
		{"mod", "4.5E+3", "0.01", "0.00"},
		{"Add", "2.1E+3", "242331632505.852758190000", "242331634605.852758190000"},
		{"Subtract", "-53.700", "5769374229238341519.70", "-5769374229238341573.400"},
		{"Multiply", "764684373794528161.23", "-3047532497130168011308500409742.545", "-2.330400479186457216345600187380130E+48"},
		{"Divide", "8.8357E-24", "878871067422208611.55", "1.005346555088647635329934572439574E-41"},
		{"mod", "0.06", "17.117", "0.060"},
		{"Add", "7174279604571162827.2", "-4.280900E+8", "7174279604143072827.2"},
		{"Subtract", "1.0353E+6", "-0.002", "1035300.002"},
		{"Multiply", "0.090", "999999999999999999999999999999999.9", "89999999999999999999999999999999.99"},
		{"Divide", "97977497982018741581685607816490.39", "9172283062662801057455837276872564", "0.01068190954342123645209614141994541"},
		{"mod", "0.02", "-436734363725568565.58", "0.02"},
		{"Add", "6E+25", "6.3254E+6", "6.00000000000000000063254E+25"},
		{"Subtract", "4.9078634646157408499E+21", "970000", "4907863464615739879900"},
		{"Multiply", "0.003", "822128547880634546490131957477261.3", "2466385643641903639470395872431.784"},
		{"Divide", "4.7676E+6", "-5725154324888.195510593034534637429", "-8.327461111876848409264452789054197E-7"},
		{"mod", "99999999999999999999999999999999.99", "0.7", "0.59"},
		{"Add", "-91", "768.09", "677.09"},
		{"Subtract", "6.40E+16", "-3000.00", "64000000000003000.00"},
		{"Multiply", "631464797201609943.96", "9127317976033920086.3", "5.763579994730868278062951232758061E+36"},
		{"Divide", "-1E+39", "-0.026", "3.846153846153846153846153846153846E+40"},
		{"mod", "0.82", "825782234343360433.17", "0.82"},
		{"Add", "1.3", "-861466874932.32939603", "-861466874931.02939603"},
		{"Subtract", "-17458119746355624540", "-1E+2", "-17458119746355624440"},
		{"Multiply", "-49704273694084470184221727374195.28", "6000", "-2.982256421645068211053303642451717E+35"},
		{"Divide", "-9E+2", "-98178255935350520.121", "9.166999265016906946631016894830942E-15"},
		{"mod", "549010.0", "0.009", "0.001"},
		{"Add", "59372057784180291.885", "315.93", "59372057784180607.815"},
		{"Subtract", "9029602166000341844435194441593591", "7.500", "9029602166000341844435194441593584"},
		{"Multiply", "-0.6", "985.35", "-591.210"},
		{"Divide", "4.0E-12", "5.708424555520455602747966945612083E+38", "7.007187291512354955635923848232855E-51"},
		{"mod", "993774962678275945.3568602095429017", "-5373811700263363097.0", "993774962678275945.3568602095429017"},
		{"Add", "9.999999999999999999999999999999999E+63", "5.52760645667090732333219875443040E+34", "1.000000000000000000000000000005528E+64"},
		{"Subtract", "-3.0000E+6", "17092079179466681686852707937311.61", "-17092079179466681686852710937311.61"},
		{"Multiply", "5.9000E-27", "-2.525617852030692731901971267074928E+53", "-1490114532698108711822163047.574208"},
		{"Divide", "-2303.0", "6.6948187441644579224E+21", "-3.439973639327294845454813131249170E-19"},
		{"mod", "9000", "3.8E+34", "9000"},
		{"Add", "-3.9E+4", "2.0237656154895038026E+43", "2.023765615489503802600000000000000E+43"},
		{"Subtract", "2.000E-6155", "-1.9734E-6172", "2.000000000000000019734E-6155"},
		{"Multiply", "5.8175E+6115", "3.2887E+6084", "Infinity"},
		{"Divide", "0.009", "0.000024449887447493982671", "368.0998540106762173644739927718376"},
		{"mod", "-5.701941237569801142236456612588522E+41", "7.7026726915310403720E+6088", "-5.701941237569801142236456612588522E+41"},
		{"Add", "5.6E-32", "9E-6105", "5.600000000000000000000000000000000E-32"},
		{"Subtract", "9.828170188076635197399279427588508E+6105", "6E-6127", "9.828170188076635197399279427588508E+6105"},
		{"Multiply", "1.607861176310763471800E+6102", "5.5E-6128", "8.8432364697091990949000E-26"},
		{"Divide", "3E+4", "6.000E+6059", "5E-6056"},
		{"mod", "-3.3833E-23", "6E+6086", "-3.3833E-23"},
		{"Add", "-2.429318541161552519390834242832659E+6094", "-9.999999999999999999999999999999999E+6128", "-9.999999999999999999999999999999999E+6128"},
		{"Subtract", "9999999999999999999.999999999999999", "9.5421E+6096", "-9.542100000000000000000000000000000E+6096"},
		{"Multiply", "9.999999999999999999999999999999999E+50", "9.9360528649948321847E-6125", "9.936052864994832184699999999999999E-6074"},
		{"Divide", "-1.1126888795168104744E-6120", "-5.6591000E-6137", "19661940582721819.27161562792670213"},
		{"mod", "1.7170068773821936310E-6138", "1E+6076", "1.7170068773821936310E-6138"},
		{"Add", "-0E+6100", "2.991000837018956054300E-6118", "2.991000837018956054300E-6118"},
		{"Subtract", "5E+6104", "4E-6152", "5.000000000000000000000000000000000E+6104"},
		{"Multiply", "-7.59682684049029161210337109282085E-6085", "7.00E+37", "-5.317778788343204128472359764974595E-6047"},
		{"Divide", "2.4E-31", "-9.999999999999999999999999999999999E+6123", "-2.400000000000000000000E-6155"},
		{"mod", "0E-6170", "-9.4452662885287439187E+6130", "0E-6170"},
		{"Add", "-3.035127091230763752600E-6097", "4088979147704335640.827303485831134", "4088979147704335640.827303485831134"},
		{"Subtract", "3.9E+16", "6E-13", "38999999999999999.9999999999994"},
		{"Multiply", "994390328428641648125324.2217853075", "-7.207800E+6067", "-7.167366609247963271357711925784139E+6091"},
		{"Divide", "3.9E-6116", "9.09720E+6108", "0E-6176"},
		{"mod", "9.999999999999999999999999999999999E-6142", "6.30540E+6063", "9.999999999999999999999999999999999E-6142"},
		{"Add", "-5.0E+32", "-9.999999999999999999999999999999999E-6103", "-500000000000000000000000000000000.0"},
		{"Subtract", "0E-6163", "9.999999999999999999999999999999999E+6116", "-9.999999999999999999999999999999999E+6116"},
		{"Multiply", "9.308762134113793387628469583962812E-6092", "-4.50E-7", "-4.188942960351207024432811312783265E-6098"},
		{"Divide", "0E-6176", "2.1844E+6115", "0E-6176"},
		{"mod", "4.606800E+6061", "1.555152357959146853665196842782913E+6113", "4.606800E+6061"},
	} {
		a, b := dec128(tc.a), dec128(tc.b)
		var got any
		var err error
		switch tc.op {
		case "Add":
			got, err = Add(a, b)
		case "Subtract":
			got, err = Subtract(a, b)
		case "Multiply":
			got, err = Multiply(a, b)
		case "Divide":
			got, err = Divide(a, b)
		default:
			got, err = evalMod("$mod", []any{a, b})
		}
		require.NoError(t, err, "%v", tc)
		assert.Equal(t, dec128(tc.want).String(), got.(bson.Decimal128).String(), "%s %s %s", tc.op, tc.a, tc.b)
	}
}

// exprOperatorsOfTheseFiles are the operators expr_arith.go,
// expr_compare.go, expr_string.go, expr_array.go, expr_type.go and
// expr_object.go register.
var exprOperatorsOfTheseFiles = []string{
	"$add", "$subtract", "$multiply", "$divide", "$mod", "$abs", "$ceil", "$floor", "$round", "$trunc",
	"$sqrt", "$pow", "$exp", "$ln", "$log", "$log10",
	"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp",
	"$concat", "$toLower", "$toUpper", "$substr", "$substrBytes", "$substrCP", "$strLenBytes", "$strLenCP",
	"$indexOfBytes", "$indexOfCP", "$split", "$strcasecmp", "$trim", "$ltrim", "$rtrim", "$replaceOne",
	"$replaceAll", "$regexMatch", "$regexFind", "$regexFindAll",
	"$size", "$arrayElemAt", "$first", "$last", "$slice", "$concatArrays", "$in", "$isArray", "$range",
	"$reverseArray", "$indexOfArray", "$arrayToObject", "$objectToArray", "$setUnion", "$setIntersection",
	"$setDifference", "$setEquals", "$setIsSubset", "$anyElementTrue", "$allElementsTrue", "$filter", "$map",
	"$reduce", "$sortArray", "$zip",
	"$type", "$isNumber", "$convert", "$toString", "$toInt", "$toLong", "$toDouble", "$toDecimal", "$toDate",
	"$toBool", "$toObjectId",
	"$mergeObjects", "$getField", "$setField", "$unsetField",
}

func TestExprOperatorsRegistered(t *testing.T) {
	for _, op := range exprOperatorsOfTheseFiles {
		if !IsExprOperator(op) {
			t.Errorf("%s is not registered", op)
		}
	}
}

// TestExprOperatorsOddOperands evaluates every operator over operands of
// every kind, positional and named: each gives a value or an error,
// never a panic.
func TestExprOperatorsOddOperands(t *testing.T) {
	maxDec, _ := bson.ParseDecimal128("9.999999999999999999999999999999999E+6144")
	tinyDec, _ := bson.ParseDecimal128("1E-6176")
	nanDec, _ := bson.ParseDecimal128("NaN")
	values := []any{
		nil, "$missing", "", "abc", "é寿", "$s", int32(-1), int32(math.MinInt32), int64(math.MaxInt64), int64(math.MinInt64),
		0.0, -0.5, 1e308, math.Inf(-1), math.NaN(), maxDec, tinyDec, nanDec, true,
		time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), codec.ObjectID{1, 2, 3},
		bson.Timestamp{T: 1, I: 2}, bson.Regex{Pattern: "a(", Options: "q"}, []any{}, []any{int32(1), "a", nil},
		[]any{[]any{"k", int32(1)}}, map[string]any{"$literal": map[string]any{"k": "a", "v": int32(1)}},
		map[string]any{"$literal": map[string]any{}}, bson.MinKey{}, []byte{1},
	}
	names := []string{"input", "as", "cond", "in", "limit", "initialValue", "sortBy", "inputs", "find", "replacement",
		"regex", "options", "chars", "to", "onError", "onNull", "field", "value", "useLongestLength", "defaults"}
	doc := codec.Document{"s": "str", "a": []any{int32(1), int32(2)}}
	try := func(expr any) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%v panicked: %v", expr, r)
			}
		}()
		e, err := CompileExprWith(expr, nil)
		if err != nil {
			return
		}
		_, _ = e.Evaluate(&Env{Root: doc, Current: doc})
	}
	for _, op := range exprOperatorsOfTheseFiles {
		for _, a := range values {
			try(map[string]any{op: a})
			try(map[string]any{op: []any{a}})
			for _, b := range values {
				try(map[string]any{op: []any{a, b}})
				try(map[string]any{op: []any{a, b, int32(2)}})
				try(map[string]any{op: []any{a, int32(1), b, int32(3)}})
			}
		}
		for i, name := range names {
			for _, a := range values {
				args := map[string]any{name: a}
				for _, other := range names[:i] {
					args[other] = "$a"
				}
				try(map[string]any{op: args})
				args["input"], args["cond"], args["in"] = "$a", true, "$$this"
				try(map[string]any{op: args})
			}
		}
	}
}
