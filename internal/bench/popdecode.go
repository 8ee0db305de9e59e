package bench

import (
	"encoding/json"

	"github.com/queen-go/queen/internal/jsonread"
)

// The load generator shares the machine with the broker and PostgreSQL, so its own CPU is
// taken from what it measures. encoding/json validated and decoded a pop answer of 100
// messages in about 0.7 ms here, as much CPU per message as the broker spent serving it;
// reading just the fields a consumer needs in one pass costs a fifth of that. Keys that are
// escaped or not ASCII are not matched (encoding/json would unescape and case-fold them);
// FuzzDecodePop checks the rest against encoding/json.

func (p *popAnswer) decodeBody(data []byte) error { return decodePop(data, p) }

// decodePop reads a pop answer: the lease id and each message's ids, partition and data.
func decodePop(data []byte, out *popAnswer) error {
	r := jsonread.New(data)
	if !r.Null() {
		for more := r.Open('{'); more; more = r.More('}') {
			key, _, err := r.Key()
			if err != nil {
				return err
			}
			switch string(key) {
			case "leaseId":
				err = r.StringOrNull(&out.LeaseID)
			case "messages":
				err = decodeMessages(r, out)
			default:
				err = r.Skip()
			}
			if err != nil {
				return err
			}
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	return r.End()
}

func decodeMessages(r *jsonread.Reader, out *popAnswer) error {
	if r.Null() {
		out.Messages = nil
		return nil
	}
	out.Messages = make([]poppedMessage, 0, 100)
	for more := r.Open('['); more; more = r.More(']') {
		var m poppedMessage
		if !r.Null() {
			if err := decodeMessage(r, &m); err != nil {
				return err
			}
		}
		out.Messages = append(out.Messages, m)
	}
	return r.Err()
}

func decodeMessage(r *jsonread.Reader, m *poppedMessage) error {
	for more := r.Open('{'); more; more = r.More('}') {
		key, _, err := r.Key()
		if err != nil {
			return err
		}
		switch string(key) {
		case "transactionId":
			err = r.StringOrNull(&m.TransactionID)
		case "partitionId":
			err = r.StringOrNull(&m.PartitionID)
		case "partition":
			err = r.StringOrNull(&m.Partition)
		case "data":
			var raw []byte
			raw, err = r.Raw()
			m.Data = json.RawMessage(raw)
		default:
			err = r.Skip()
		}
		if err != nil {
			return err
		}
	}
	return r.Err()
}
