package trace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"time"
)

// Reader reads a trace file request by request, checking every block's checksum. Not safe for
// concurrent use.
type Reader struct {
	br      *bufio.Reader
	h       Header
	buf     []Request // the current block's requests
	next    int
	count   uint64 // requests returned or buffered
	lastUs  int64
	block   int // blocks read
	payload []byte
	err     error // returned once buf is drained
}

// hashingReader feeds every byte it reads into a checksum (the header's CRC).
type hashingReader struct {
	r *bufio.Reader
	h hash.Hash32
}

func (h *hashingReader) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.h.Write([]byte{b})
	}
	return b, err
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

// NewReader reads and checks the header of the trace in r.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	m := make([]byte, len(magic))
	if n, err := io.ReadFull(br, m); err != nil {
		if n > 0 && string(m[:n]) == magic[:n] {
			return nil, fmt.Errorf("trace header: cut short after %d bytes: %w", n, ErrTruncated)
		}
		return nil, fmt.Errorf("trace header: %d bytes, not a ratelab trace (want magic %q): %w", n, magic, ErrCorrupt)
	}
	if string(m) != magic {
		return nil, fmt.Errorf("trace header: magic %q: not a ratelab trace (want %q): %w", m, magic, ErrCorrupt)
	}
	hr := &hashingReader{r: br, h: crc32.NewIEEE()}
	h, err := readHeader(hr)
	if err != nil {
		return nil, err
	}
	sum := hr.h.Sum32()
	var c [4]byte
	if _, err := io.ReadFull(br, c[:]); err != nil {
		return nil, fmt.Errorf("trace header: checksum: %w", eofIsTruncated(err))
	}
	if got := binary.LittleEndian.Uint32(c[:]); got != sum {
		return nil, fmt.Errorf("trace header: checksum %08x, computed %08x: %w", got, sum, ErrCorrupt)
	}
	return &Reader{br: br, h: h}, nil
}

func eofIsTruncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}

func readHeader(r *hashingReader) (Header, error) {
	var h Header
	field := func(name string, limit uint64) (uint64, error) {
		v, err := binary.ReadUvarint(r)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("trace header: %s: %w", name, ErrTruncated)
			}
			return 0, fmt.Errorf("trace header: %s: %v: %w", name, err, ErrCorrupt)
		}
		if v > limit {
			return 0, fmt.Errorf("trace header: %s %d: at most %d: %w", name, v, limit, ErrCorrupt)
		}
		return v, nil
	}
	str := func(name string) (string, error) {
		n, err := field(name+" length", MaxNameLen)
		if err != nil {
			return "", err
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", fmt.Errorf("trace header: %s: %w", name, eofIsTruncated(err))
		}
		return string(b), nil
	}
	v, err := field("version", math.MaxUint32)
	if err != nil {
		return h, err
	}
	if v != Version {
		return h, fmt.Errorf("trace header: version %d: this ratelab reads version %d: %w", v, Version, ErrVersion)
	}
	start, err := field("start", math.MaxInt64)
	if err != nil {
		return h, err
	}
	if start > 0 {
		h.Start = time.UnixMicro(int64(start)).UTC()
	}
	if h.TenantPrefix, err = str("tenant prefix"); err != nil {
		return h, err
	}
	nt, err := field("tenant count", MaxTenantNames)
	if err != nil {
		return h, err
	}
	for i := uint64(0); i < nt; i++ {
		s, err := str(fmt.Sprintf("tenants[%d]", i))
		if err != nil {
			return h, err
		}
		if s == "" {
			return h, fmt.Errorf("trace header: tenants[%d]: empty name: %w", i, ErrCorrupt)
		}
		h.Tenants = append(h.Tenants, s)
	}
	ne, err := field("endpoint count", MaxEndpoints)
	if err != nil {
		return h, err
	}
	if ne == 0 {
		return h, fmt.Errorf("trace header: endpoint count 0: want at least 1: %w", ErrCorrupt)
	}
	for i := uint64(0); i < ne; i++ {
		s, err := str(fmt.Sprintf("endpoints[%d]", i))
		if err != nil {
			return h, err
		}
		if s == "" {
			return h, fmt.Errorf("trace header: endpoints[%d]: empty name: %w", i, ErrCorrupt)
		}
		h.Endpoints = append(h.Endpoints, s)
	}
	return h, nil
}

// Header is the trace's header.
func (r *Reader) Header() Header { return r.h }

// Next returns the next request; io.EOF after the end marker. A damaged file's error
// (ErrTruncated, ErrCorrupt) comes after every request before the damage.
func (r *Reader) Next() (Request, error) {
	for r.next == len(r.buf) {
		if r.err != nil {
			return Request{}, r.err
		}
		r.buf, r.next = r.buf[:0], 0
		r.err = r.readBlock()
	}
	rec := r.buf[r.next]
	r.next++
	return rec, nil
}

// readBlock reads one block into r.buf, or returns the error that ends the file (io.EOF at the
// end marker). Requests of a cut-short block that decode completely are kept in r.buf.
func (r *Reader) readBlock() error {
	at := fmt.Sprintf("block %d (after request %d)", r.block, r.count)
	n, err := binary.ReadUvarint(r.br)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("trace %s: no end marker, the file was cut short (interrupted write?): %w", at, ErrTruncated)
		}
		return fmt.Errorf("trace %s: request count: %v: %w", at, err, ErrCorrupt)
	}
	if n == 0 {
		total, err := binary.ReadUvarint(r.br)
		if err != nil {
			return fmt.Errorf("trace end marker: request total: %w", eofIsTruncated(err))
		}
		if total != r.count {
			return fmt.Errorf("trace end marker: says %d requests, the blocks hold %d: %w", total, r.count, ErrCorrupt)
		}
		if _, err := r.br.ReadByte(); err == nil {
			return fmt.Errorf("trace: bytes after the end marker: %w", ErrCorrupt)
		}
		return io.EOF
	}
	if n > MaxBlockRequests {
		return fmt.Errorf("trace %s: %d requests, at most %d: %w", at, n, MaxBlockRequests, ErrCorrupt)
	}
	size, err := binary.ReadUvarint(r.br)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("trace %s: payload length: %w", at, ErrTruncated)
		}
		return fmt.Errorf("trace %s: payload length: %v: %w", at, err, ErrCorrupt)
	}
	if size < 4*n || size > maxRequestBytes*n {
		return fmt.Errorf("trace %s: payload of %d bytes for %d requests: %w", at, size, n, ErrCorrupt)
	}
	if cap(r.payload) < int(size) {
		r.payload = make([]byte, size)
	}
	p := r.payload[:size]
	got, err := io.ReadFull(r.br, p)
	if err != nil {
		// Cut short: keep the requests that are there in full; they cannot be checked.
		r.decode(p[:got], n)
		return fmt.Errorf("trace %s: payload cut short at %d of %d bytes (%d whole requests kept, unchecked): %w",
			at, got, size, len(r.buf), ErrTruncated)
	}
	var c [4]byte
	if _, err := io.ReadFull(r.br, c[:]); err != nil {
		r.decode(p, n)
		return fmt.Errorf("trace %s: checksum cut short (%d requests kept, unchecked): %w", at, len(r.buf), ErrTruncated)
	}
	if want, sum := binary.LittleEndian.Uint32(c[:]), crc32.ChecksumIEEE(p); want != sum {
		return fmt.Errorf("trace %s: checksum %08x, computed %08x: the block is damaged: %w", at, want, sum, ErrCorrupt)
	}
	if err := r.decode(p, n); err != nil {
		r.buf = r.buf[:0]
		return fmt.Errorf("trace %s: %v: %w", at, err, ErrCorrupt)
	}
	r.block++
	return nil
}

// decode appends up to n requests from p to r.buf. It stops at the first request that does not
// decode in full or does not fit the header, and reports it; it also reports a payload that is
// not exactly n requests.
func (r *Reader) decode(p []byte, n uint64) error {
	for i := uint64(0); i < n; i++ {
		var f [4]uint64
		q := p
		for j := range f {
			v, k := binary.Uvarint(q)
			if k <= 0 {
				return fmt.Errorf("request %d: field %d does not decode", r.count, j)
			}
			f[j], q = v, q[k:]
		}
		if f[0] > uint64(math.MaxInt64/int64(time.Microsecond)-r.lastUs) {
			return fmt.Errorf("request %d: time delta %d us overflows", r.count, f[0])
		}
		if f[1] > math.MaxUint32 || f[2] > math.MaxUint16 || f[3] > math.MaxUint32 {
			return fmt.Errorf("request %d: tenant %d, endpoint %d or cost %d out of range", r.count, f[1], f[2], f[3])
		}
		us := r.lastUs + int64(f[0])
		rec := Request{At: time.Duration(us) * time.Microsecond, Tenant: uint32(f[1]), Endpoint: uint16(f[2]), Cost: uint32(f[3])}
		if err := r.h.checkRecord(rec); err != nil {
			return fmt.Errorf("request %d: %v", r.count, err)
		}
		r.buf = append(r.buf, rec)
		r.lastUs = us
		r.count++
		p = q
	}
	if len(p) != 0 {
		return fmt.Errorf("%d bytes after the block's %d requests", len(p), n)
	}
	return nil
}

// ReadAll reads a whole trace. On a damaged file it returns what was readable (requests before
// the damage) together with the error; a nil *Trace means not even the header was readable.
func ReadAll(r io.Reader) (*Trace, error) {
	tr, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	t := &Trace{Header: tr.Header()}
	for {
		rec, err := tr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return t, err
		}
		t.Requests = append(t.Requests, rec)
	}
}
