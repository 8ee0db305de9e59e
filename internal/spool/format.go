package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"
)

// The on-disk layout; the package doc describes it in prose.
const (
	fileMagic   = "QSPOOL"
	fileVersion = 1
	headerLen   = 8 // magic, version byte, one reserved zero byte

	frameHeaderLen = 8 // body length, CRC32C of length and body
	// maxFrameBody bounds a frame's declared length: a larger one can only be a torn or corrupt
	// header, and reading it would allocate whatever garbage claims.
	maxFrameBody = 1 << 30

	ckptMagic   = "QSCK"
	ckptVersion = 1
	ckptLen     = 20 // magic, version, 3 reserved, count (8), CRC32C of the first 16 bytes
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileHeader is the first headerLen bytes of every spool file.
func fileHeader() []byte {
	h := make([]byte, headerLen)
	copy(h, fileMagic)
	h[len(fileMagic)] = fileVersion
	return h
}

// frameSum is the checksum of a frame: it covers the length too, so an all-zero header (a
// length of 0 and a checksum of 0, as a file extended by a crash reads) never verifies.
func frameSum(lenBytes, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(lenBytes, castagnoli), castagnoli, body)
}

// encodeRecord appends r's encoding (without its length prefix) to dst.
func encodeRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, r.SpooledAt.UnixNano())
	for _, s := range [...]string{r.Queue, r.Partition, r.MessageID, r.Key, r.TraceID} {
		dst = appendString(dst, s)
	}
	if r.ProducerSub == nil {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = appendString(dst, *r.ProducerSub)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Payload)))
	return append(dst, r.Payload...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

var errDecode = errors.New("malformed record")

// decoder reads the fields of a verified frame body; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errDecode
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errDecode
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errDecode
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errDecode
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// decodeFrame decodes records skip to skip+limit of a verified frame body and reports how
// many the frame holds. The others are walked over but not built, so a batch that starts or
// ends inside a large frame costs no copies for them; scanning builds none (limit 0), yet
// still checks that every record is where its length says. Payloads are copied out of body,
// so the caller may reuse it.
func decodeFrame(body []byte, skip, limit int) ([]Record, int, error) {
	d := decoder{b: body}
	n := d.uvarint()
	if d.err != nil || n == 0 || n > uint64(len(body)) {
		return nil, 0, errDecode
	}
	var out []Record
	if limit > 0 && skip < int(n) {
		out = make([]Record, 0, min(int(n)-skip, limit))
	}
	for i := 0; i < int(n); i++ {
		rb := d.bytes()
		if d.err != nil {
			return nil, 0, d.err
		}
		if i < skip || i >= skip+limit {
			continue
		}
		r, err := decodeRecord(rb)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, 0, errDecode
	}
	return out, int(n), nil
}

func decodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	var r Record
	ns := d.varint()
	strs := [5]*string{&r.Queue, &r.Partition, &r.MessageID, &r.Key, &r.TraceID}
	for _, p := range strs {
		*p = string(d.bytes())
	}
	switch d.byte() {
	case 0:
	case 1:
		s := string(d.bytes())
		r.ProducerSub = &s
	default:
		d.err = errDecode
	}
	if p := d.bytes(); d.err == nil {
		r.Payload = bytes.Clone(p)
		if r.Payload == nil {
			r.Payload = []byte{}
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return Record{}, errDecode
	}
	r.SpooledAt = time.Unix(0, ns).UTC()
	return r, nil
}

// frameInfo is where one verified frame sits and how many records it holds.
type frameInfo struct {
	off int64
	n   int
}

// scanResult is what a scan of one spool file found.
type scanResult struct {
	frames []frameInfo
	count  int   // records in verified frames
	end    int64 // offset after the last verified frame
	torn   bool  // invalid bytes follow end, and they are the tail of the file
}

// CorruptError reports a record that fails verification where no torn write can explain it:
// in a file other than the newest, or with verified-looking data after it. Open stops rather
// than skip it, since skipping would lose acknowledged pushes silently.
type CorruptError struct {
	File   string // path of the spool file
	Offset int64  // byte offset of the record that fails
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("spool: corrupt record in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// readFrameAt reads and verifies the frame at off of a file of size bytes. A failure is
// reported as a reason text; end is where the frame claims to end (size+1 when it cannot tell).
func readFrameAt(f io.ReaderAt, off, size int64, buf []byte) (body []byte, end int64, reason string, err error) {
	if size-off < frameHeaderLen {
		return nil, size + 1, "incomplete record header", nil
	}
	var h [frameHeaderLen]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return nil, 0, "", err
	}
	n := int64(binary.LittleEndian.Uint32(h[:4]))
	if n > maxFrameBody {
		return nil, size + 1, fmt.Sprintf("record length %d out of range", n), nil
	}
	end = off + frameHeaderLen + n
	if end > size {
		return nil, end, fmt.Sprintf("record of %d bytes runs past the end of the file", n), nil
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	body = buf[:n]
	if _, err := f.ReadAt(body, off+frameHeaderLen); err != nil {
		return nil, 0, "", err
	}
	if frameSum(h[:4], body) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, end, "checksum mismatch", nil
	}
	return body, end, "", nil
}

// scanFile verifies every frame of a spool file. In the newest file (newest), invalid bytes
// after which no frame verifies are a torn write: reported in torn, for the caller to
// truncate at end. Any other failure is a *CorruptError.
func scanFile(path string, f *os.File, size int64, newest bool) (scanResult, error) {
	var res scanResult
	hdr := make([]byte, headerLen)
	if size < headerLen {
		if newest {
			// The file's first write never completed, so nothing in it was acknowledged.
			res.torn = true
			return res, nil
		}
		return res, &CorruptError{File: path, Offset: 0, Reason: "incomplete file header"}
	}
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return res, fmt.Errorf("spool: read %s: %w", path, err)
	}
	if string(hdr[:len(fileMagic)]) != fileMagic {
		if newest {
			// The header goes out in the file's first write: when nothing in the file verifies,
			// that write was torn (a crash can leave its pages zero) and never acknowledged.
			after, err := frameAfter(f, 0, size)
			if err != nil {
				return res, fmt.Errorf("spool: read %s: %w", path, err)
			}
			if !after {
				res.torn = true
				return res, nil
			}
		}
		return res, &CorruptError{File: path, Offset: 0, Reason: "not a spool file"}
	}
	if v := hdr[len(fileMagic)]; v != fileVersion {
		return res, fmt.Errorf("spool: %s has format version %d, this build reads version %d", path, v, fileVersion)
	}
	off := int64(headerLen)
	var buf []byte
	for off < size {
		body, end, reason, err := readFrameAt(f, off, size, buf)
		if err != nil {
			return res, fmt.Errorf("spool: read %s: %w", path, err)
		}
		if reason == "" {
			_, n, derr := decodeFrame(body, 0, 0)
			if derr != nil {
				// The checksum verified, so the writer wrote this: a bug or another format.
				return res, &CorruptError{File: path, Offset: off, Reason: "checksum verifies but records do not decode"}
			}
			buf = body[:0]
			res.frames = append(res.frames, frameInfo{off: off, n: n})
			res.count += n
			off = end
			continue
		}
		if newest {
			after, err := frameAfter(f, off, size)
			if err != nil {
				return res, fmt.Errorf("spool: read %s: %w", path, err)
			}
			if !after {
				res.torn = true
				break
			}
			reason += "; verified records follow it"
		}
		return res, &CorruptError{File: path, Offset: off, Reason: reason}
	}
	res.end = off
	return res, nil
}

// frameAfter reports whether a frame that verifies starts anywhere in f after off. A torn
// write leaves none: the writer writes one frame per group commit, so the unacknowledged write
// a crash cuts short is a single frame, whatever parts of it reached the disk. Verified data
// after bad bytes means the bad bytes were once acknowledged: corruption, not a torn write.
// Reading the tail whole is fine: after a crash it is one write; larger only when corrupt.
func frameAfter(f *os.File, off, size int64) (bool, error) {
	t := make([]byte, size-off)
	if _, err := f.ReadAt(t, off); err != nil {
		return false, err
	}
	for o := 1; o+frameHeaderLen < len(t); o++ {
		n := int(binary.LittleEndian.Uint32(t[o:]))
		if n < 1 || n > len(t)-o-frameHeaderLen {
			continue
		}
		body := t[o+frameHeaderLen : o+frameHeaderLen+n]
		if frameSum(t[o:o+4], body) == binary.LittleEndian.Uint32(t[o+4:]) {
			return true, nil
		}
	}
	return false, nil
}

// encodeCheckpoint is the content of a checkpoint file: count records of its spool file are
// replayed.
func encodeCheckpoint(count int) []byte {
	b := make([]byte, ckptLen)
	copy(b, ckptMagic)
	b[len(ckptMagic)] = ckptVersion
	binary.LittleEndian.PutUint64(b[8:], uint64(count))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	return b
}

// decodeCheckpoint reads a checkpoint; ok is false when it does not verify.
func decodeCheckpoint(b []byte) (count int, ok bool) {
	if len(b) != ckptLen || string(b[:len(ckptMagic)]) != ckptMagic || b[len(ckptMagic)] != ckptVersion ||
		crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return 0, false
	}
	c := binary.LittleEndian.Uint64(b[8:])
	if c > 1<<40 {
		return 0, false
	}
	return int(c), true
}
