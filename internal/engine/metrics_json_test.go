package engine

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rule: Metrics is JSON-encodable, and decodes back to the same value;
// per-index maps are keyed "collection.index".
func TestMetricsJSONRoundTrip(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	a := ttlColl(t, db, "logs.2026", 0)
	_, err := a.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("meta.seen")}, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	insertDated(t, a, "a", 3, t0)
	_, err = a.InsertOne(context.Background(), Document{"_id": "s", "meta": Document{"seen": t0}})
	require.NoError(t, err)
	insertDated(t, ttlColl(t, db, "sessions", 0), "s", 2, t0)
	clk.Advance(time.Minute)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	insertDated(t, db.Collection("sessions"), "late", 4, t0) // a backlog
	clk.Advance(1500 * time.Millisecond)

	m := db.Metrics()
	require.Len(t, m.TTL.DeletedByIndex, 3)
	require.Equal(t, int64(4), m.TTL.Backlog)
	m.TTL.FailedDeliveries = map[IndexRef]FailedDeliveries{{"sessions", "lastModifiedDate_1"}: {Count: 2, OldestAge: time.Second}}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, map[string]any{
		`logs\.2026.lastModifiedDate_1`: 3.0,
		`logs\.2026.meta.seen_1`:        1.0,
		"sessions.lastModifiedDate_1":   2.0,
	}, raw["TTL"]["DeletedByIndex"])

	var back Metrics
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, m, back)
}

func TestIndexRefText(t *testing.T) {
	cases := []struct {
		ref  IndexRef
		text string
	}{
		{IndexRef{"sessions", "lastSeen_1"}, "sessions.lastSeen_1"},
		{IndexRef{"a.b", "c.d_1"}, `a\.b.c.d_1`},
		{IndexRef{`back\slash`, `x\y`}, `back\\slash.x\y`},
		{IndexRef{"", ""}, "."},
		{IndexRef{"c.", ".i"}, `c\...i`},
		{IndexRef{"ünïcode", "日付_1"}, "ünïcode.日付_1"},
	}
	for _, c := range cases {
		text, err := c.ref.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, c.text, string(text))
		var back IndexRef
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, c.ref, back)
	}
	for _, bad := range []string{"", "no-dot", `only\.escaped`, `dangling\`, `bad\escape.i`} {
		var r IndexRef
		err := r.UnmarshalText([]byte(bad))
		assert.ErrorIs(t, err, ErrInvalidOptions, "%q", bad)
		assert.Equal(t, IndexRef{}, r, "a failed decode changes nothing")
	}
	// Any pair of names round-trips.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', '.', '\\', 'z', '_', '1'}
	word := func() string {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 2000 {
		ref := IndexRef{word(), word()}
		text, err := ref.MarshalText()
		require.NoError(t, err)
		var back IndexRef
		require.NoError(t, back.UnmarshalText(text), "%q", text)
		require.Equal(t, ref, back, "%q", text)
	}
}
