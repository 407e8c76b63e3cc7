package aggregate

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestManual_accumulatorExpressions: the manual's examples of $sum, $avg,
// $max and $min as expressions in $project (the students collection):
// one array argument is traversed, a list of arguments is not.
func TestManual_accumulatorExpressions(t *testing.T) {
	students := []Document{
		{"_id": 1, "quizzes": []any{10, 6, 7}, "labs": []any{5, 8}, "final": 80, "midterm": 75},
		{"_id": 2, "quizzes": []any{9, 10}, "labs": []any{8, 8}, "final": 95, "midterm": 80},
		{"_id": 3, "quizzes": []any{4, 5, 5}, "labs": []any{6, 5}, "final": 78, "midterm": 70},
	}
	project := func(op string) []Document {
		return run(t, []any{bson.D{{Key: "$project", Value: bson.D{
			{Key: "quiz", Value: bson.D{{Key: op, Value: "$quizzes"}}},
			{Key: "lab", Value: bson.D{{Key: op, Value: "$labs"}}},
			{Key: "exam", Value: bson.D{{Key: op, Value: bson.A{"$final", "$midterm"}}}},
		}}}}, students)
	}
	row := func(id, quiz, lab, exam any) Document {
		return Document{"_id": id, "quiz": quiz, "lab": lab, "exam": exam}
	}
	requireSameDocs(t, []Document{row(1, int64(23), int64(13), int64(155)), row(2, int64(19), int64(16), int64(175)), row(3, int64(14), int64(11), int64(148))}, project("$sum"))
	requireSameDocs(t, []Document{row(1, 7.666666666666667, 6.5, 77.5), row(2, 9.5, 8.0, 87.5), row(3, 4.666666666666667, 5.5, 74.0)}, project("$avg"))
	requireSameDocs(t, []Document{row(1, 10, 8, 80), row(2, 10, 8, 95), row(3, 5, 6, 78)}, project("$max"))
	requireSameDocs(t, []Document{row(1, 6, 5, 75), row(2, 9, 8, 80), row(3, 4, 5, 70)}, project("$min"))

	// A list of arguments does not traverse an array among them: $sum
	// ignores it as a non-number; $max compares it as a value (arrays sort
	// after numbers).
	one := []Document{{"_id": 1, "a": []any{1, 2}, "b": 5}}
	got := run(t, []any{bson.D{{Key: "$project", Value: bson.D{
		{Key: "s", Value: bson.D{{Key: "$sum", Value: bson.A{"$a", "$b"}}}},
		{Key: "m", Value: bson.D{{Key: "$max", Value: bson.A{"$a", "$b"}}}},
		{Key: "none", Value: bson.D{{Key: "$avg", Value: "$missing"}}},
		{Key: "sd", Value: bson.D{{Key: "$stdDevPop", Value: bson.A{1, 3}}}},
	}}}}, one)
	requireSameDocs(t, []Document{{"_id": 1, "s": int64(5), "m": []any{1, 2}, "none": nil, "sd": 1.0}}, got)
}
