package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
)

// txnFileOp is one operation of a transaction file, in the broker's own request format
// (POST /api/v1/transaction), so a file can be tried with curl and with queenctl alike.
type txnFileOp struct {
	Type  string             `json:"type"`
	Items *[]json.RawMessage `json:"items"` // present: a nested push
	txnFileItem
	PartitionID   string `json:"partitionId"`
	ConsumerGroup string `json:"consumerGroup"`
	Status        string `json:"status"`
	LeaseID       string `json:"leaseId"`
	Error         string `json:"error"`
}

// txnFileItem is one pushed item; a flat push is an item itself.
type txnFileItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Payload       json.RawMessage `json:"payload"` // nil when absent; "null" is a value
	Data          json.RawMessage `json:"data"`    // alias of payload, as on the broker
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId"`
}

// item converts to the SDK's Item with the broker's defaults: payload wins over data, and
// neither means {}.
func (it txnFileItem) item() queen.Item {
	p := it.Payload
	if p == nil {
		p = it.Data
	}
	if p == nil {
		p = json.RawMessage("{}")
	}
	return queen.Item{Payload: p, TransactionID: it.TransactionID, TraceID: it.TraceID}
}

// txnCmd commits a transaction described by a JSON file.
func (a *app) txnCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "txn FILE|-",
		Short: "Commit a transaction read from a JSON file",
		Long: `Commit a transaction read from a JSON file in the broker's own request format
(POST /api/v1/transaction: {"operations":[...],"requiredLeases":[...]}); '-' reads stdin.
A transaction already committed (its keys taken) counts as success.`,
		Args: nargs(1, 1),
		RunE: a.run(func(args []string) int {
			var in io.Reader = a.stdin
			if name := args[0]; name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return a.usageError("%v", err)
				}
				defer f.Close()
				in = f
			}
			tx, err := readTxn(a.c, in)
			if err != nil {
				return a.usageError("%s: %v", args[0], err)
			}
			res, err := tx.Commit(a.ctx)
			if te, ok := errors.AsType[*queen.TxnError](err); ok {
				fmt.Fprintf(a.stderr, "queenctl txn: rolled back: %s\n", te.Message)
				return exitFailure
			}
			if err != nil {
				return a.fail(err)
			}
			if a.g.output != "json" && a.g.output != "yaml" {
				fmt.Fprintf(a.stdout, "%s %s\n", res.Status, res.TransactionID)
			}
			rows := make([][]string, len(res.Results))
			for i, r := range res.Results {
				rows[i] = []string{strconv.Itoa(r.Index), r.Type, r.TransactionID, r.MessageID, r.Queue}
			}
			return a.print(res, []string{"INDEX", "TYPE", "TRANSACTION_ID", "MESSAGE_ID", "QUEUE"}, rows)
		}),
	}
}

// readTxn builds the SDK transaction from the file, checking what the broker would refuse
// with a 400, so a bad file is a usage error that names the operation.
func readTxn(c *queen.Client, in io.Reader) (*queen.Transaction, error) {
	var file struct {
		Operations     []txnFileOp `json:"operations"`
		RequiredLeases []string    `json:"requiredLeases"`
	}
	if err := json.NewDecoder(in).Decode(&file); err != nil {
		return nil, fmt.Errorf("not a transaction JSON document: %w", err)
	}
	if len(file.Operations) == 0 {
		return nil, errors.New(`no "operations"`)
	}
	tx := c.Transaction().RequireLease(file.RequiredLeases...)
	for i, op := range file.Operations {
		switch {
		case op.Type == "ack":
			tx.AckWith(queen.Ack{TransactionID: op.TransactionID, PartitionID: op.PartitionID, LeaseID: op.LeaseID,
				ConsumerGroup: op.ConsumerGroup, Status: queen.AckStatus(op.Status), Error: op.Error})
		case op.Type == "push" && op.Items == nil:
			tx.Queue(op.Queue).Partition(op.Partition).Push(op.item())
		case op.Type == "push":
			for j, raw := range *op.Items {
				var it txnFileItem
				if err := json.Unmarshal(raw, &it); err != nil {
					return nil, fmt.Errorf("operation %d, item %d: %w", i, j, err)
				}
				tx.Queue(it.Queue).Partition(it.Partition).Push(it.item())
			}
		default:
			return nil, fmt.Errorf("operation %d: unknown type %q: want push or ack", i, op.Type)
		}
	}
	return tx, nil
}
