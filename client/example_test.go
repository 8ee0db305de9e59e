package queen_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	queen "github.com/queen-go/queen/client"
)

// Clients of a cluster fail over between instances and retry 5xx answers with backoff.
func ExampleNew() {
	c, err := queen.New("http://queen-1:6632",
		queen.WithURLs("http://queen-2:6632", "http://queen-3:6632"),
		queen.WithBearerToken("eyJhbGciOi…"),
		queen.WithTimeout(10*time.Second),
		queen.WithRetry(queen.RetryPolicy{MaxRetries: 5, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second}),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.URLs())
	// Output: [http://queen-1:6632 http://queen-2:6632 http://queen-3:6632]
}

// Every attempt at processing the same input derives the same ids.
func ExampleDerivedTransactionID() {
	in := &queen.Message{PartitionID: "0198f2c1-9a7b-7d20-8e31-4c5d6e7f8a90", TransactionID: "order-8891"}
	first, retry := queen.DerivedTransactionID(in, "invoice"), queen.DerivedTransactionID(in, "invoice")
	fmt.Println(first == retry)
	fmt.Println(first == queen.DerivedTransactionID(in, "email"))
	// Output:
	// true
	// false
}

// Browsing the dead-letter queue of one consumer group.
func ExampleQueue_DLQ() {
	ctx := context.Background()
	c, _ := queen.New("http://localhost:6632")
	page, err := c.Queue("orders").DLQ(ctx, queen.DLQQuery{ConsumerGroup: "billing", Limit: 50})
	if errors.Is(err, queen.ErrUnsupported) {
		return // an older broker without DLQ browsing
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range page.Messages {
		fmt.Println(e.FailedAt, e.TransactionID, e.ErrorMessage)
	}
}

// Replaying a consumer group from an hour ago.
func ExampleQueue_Seek() {
	ctx := context.Background()
	c, _ := queen.New("http://localhost:6632")
	if _, err := c.Queue("orders").Seek(ctx, "billing", queen.SeekTime(time.Now().Add(-time.Hour))); err != nil {
		log.Print(err)
	}
}
