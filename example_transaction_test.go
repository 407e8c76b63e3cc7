package ttldb_test

import (
	"context"
	"fmt"

	"github.com/ttldb/ttldb"
)

// A transaction inserts an order and decrements the stock: all of it or
// none, and nothing visible outside it before the commit.
func ExampleDB_StartSession() {
	ctx := context.Background()
	db, err := ttldb.Open()
	if err != nil {
		panic(err)
	}
	defer db.Close()
	orders, stock := db.Collection("orders"), db.Collection("stock")
	if _, err := stock.InsertOne(ctx, ttldb.Document{"_id": "apple", "n": 10}); err != nil {
		panic(err)
	}

	sess, err := db.StartSession()
	if err != nil {
		panic(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		if _, err := orders.InsertOne(ctx, ttldb.Document{"_id": "o-17", "item": "apple"}); err != nil {
			return nil, err
		}
		// Outside the transaction, the order does not exist yet.
		n, _ := orders.CountDocuments(context.Background(), nil)
		fmt.Println("orders seen outside before the commit:", n)
		return stock.UpdateOne(ctx, ttldb.Document{"_id": "apple"}, ttldb.Document{"$inc": ttldb.Document{"n": -1}})
	})
	if err != nil {
		panic(err)
	}
	var apple struct{ N int }
	if err := stock.FindOne(ctx, ttldb.Document{"_id": "apple"}).Decode(&apple); err != nil {
		panic(err)
	}
	n, _ := orders.CountDocuments(ctx, nil)
	fmt.Println("orders:", n, "apples:", apple.N)
	// Output:
	// orders seen outside before the commit: 0
	// orders: 1 apples: 9
}
