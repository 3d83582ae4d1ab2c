package trace

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"time"
)

// Writer writes a trace file: the header at NewWriter, requests in checksummed blocks of
// MaxBlockRequests as they come, and the end marker at Close. Each block goes to the
// underlying writer in one Write, so an interrupted recording leaves whole blocks behind.
// Not safe for concurrent use.
type Writer struct {
	w      io.Writer
	h      Header
	block  []byte // the current block's payload
	n      int    // requests in block
	total  uint64
	lastUs int64
	out    []byte // scratch for one block's framing
	closed bool
	err    error // the first write error; every later call returns it
}

// NewWriter validates h, writes the header to w and returns a Writer for the requests.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	body := binary.AppendUvarint(nil, Version)
	var start uint64
	if !h.Start.IsZero() {
		start = uint64(h.Start.UnixMicro())
	}
	body = binary.AppendUvarint(body, start)
	body = appendString(body, h.TenantPrefix)
	body = binary.AppendUvarint(body, uint64(len(h.Tenants)))
	for _, t := range h.Tenants {
		body = appendString(body, t)
	}
	body = binary.AppendUvarint(body, uint64(len(h.Endpoints)))
	for _, e := range h.Endpoints {
		body = appendString(body, e)
	}
	buf := append([]byte(magic), body...)
	buf = binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(body))
	if _, err := w.Write(buf); err != nil {
		return nil, fmt.Errorf("trace: write header: %w", err)
	}
	h.Tenants = append([]string(nil), h.Tenants...)
	h.Endpoints = append([]string(nil), h.Endpoints...)
	return &Writer{w: w, h: h, block: make([]byte, 0, MaxBlockRequests*8)}, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Write appends one request. Its offset is truncated to a whole microsecond and must not be
// before the previous request's; its tenant and endpoint must be ones the header names.
func (w *Writer) Write(r Request) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("%w: request %d: writer already closed", ErrInvalid, w.total)
	}
	us := int64(r.At / time.Microsecond)
	if r.At < 0 || us < w.lastUs {
		return fmt.Errorf("%w: request %d at %v: before the previous request (%v); requests must be in time order",
			ErrInvalid, w.total, r.At, time.Duration(w.lastUs)*time.Microsecond)
	}
	if us > math.MaxInt64/int64(time.Microsecond) {
		return fmt.Errorf("%w: request %d at %v: offset too large", ErrInvalid, w.total, r.At)
	}
	if err := w.h.checkRecord(r); err != nil {
		return fmt.Errorf("%w: request %d: %v", ErrInvalid, w.total, err)
	}
	w.block = binary.AppendUvarint(w.block, uint64(us-w.lastUs))
	w.block = binary.AppendUvarint(w.block, uint64(r.Tenant))
	w.block = binary.AppendUvarint(w.block, uint64(r.Endpoint))
	w.block = binary.AppendUvarint(w.block, uint64(r.Cost))
	w.lastUs = us
	w.n++
	w.total++
	if w.n == MaxBlockRequests {
		return w.flush()
	}
	return nil
}

// Flush writes the requests buffered so far as a block (a recorder calls it now and then, so
// a crash loses little).
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	return w.flush()
}

func (w *Writer) flush() error {
	if w.n == 0 {
		return nil
	}
	out := binary.AppendUvarint(w.out[:0], uint64(w.n))
	out = binary.AppendUvarint(out, uint64(len(w.block)))
	out = append(out, w.block...)
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(w.block))
	w.out = out
	w.block = w.block[:0]
	w.n = 0
	if _, err := w.w.Write(out); err != nil {
		w.err = fmt.Errorf("trace: write block ending at request %d: %w", w.total, err)
		return w.err
	}
	return nil
}

// Close writes the last block and the end marker. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	w.closed = true
	end := binary.AppendUvarint([]byte{0}, w.total)
	if _, err := w.w.Write(end); err != nil {
		w.err = fmt.Errorf("trace: write end marker: %w", err)
	}
	return w.err
}

// Count is the number of requests written so far.
func (w *Writer) Count() uint64 { return w.total }

// Write writes t to w as a complete trace file.
func Write(w io.Writer, t *Trace) error {
	tw, err := NewWriter(w, t.Header)
	if err != nil {
		return err
	}
	for _, r := range t.Requests {
		if err := tw.Write(r); err != nil {
			return err
		}
	}
	return tw.Close()
}
