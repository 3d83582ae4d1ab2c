// Package trace owns ratelab's request traces: a compact binary file of timed requests
// (time offset, tenant, endpoint, cost), its Writer and Reader, synthetic generation from the
// workload package's pacers and key distributions (the same seed gives the same trace as the
// scenario engine's stream), and import from a CSV access log.
//
// # File format, version 1
//
// All integers are unsigned LEB128 varints (encoding/binary.AppendUvarint) unless stated.
//
//	header:  magic "RLTRACE\n" (8 bytes), version (=1),
//	         start (Unix microseconds of offset 0; 0 = unknown),
//	         tenant prefix (length, bytes), tenant count T, T tenant names (length, bytes),
//	         endpoint count E (>= 1), E endpoint names (length, bytes),
//	         CRC-32 (IEEE, 4 bytes little-endian) of every header byte after the magic.
//	blocks:  request count n (1..MaxBlockRequests), payload length L, L payload bytes,
//	         CRC-32 (4 bytes LE) of the payload. The payload is n requests:
//	           delta  microseconds since the previous request (the first request of the file:
//	                  since offset 0), so offsets never decrease;
//	           tenant id (< T when T > 0; with T = 0 tenant i's name is prefix + decimal i);
//	           endpoint index (< E); cost in tokens.
//	end:     a block count of 0, then the total request count.
//
// A file without the end marker was cut short (ErrTruncated); a block whose checksum or fields
// do not hold is ErrCorrupt. Either way the reader returns every request before the damage (and
// the complete requests of a cut-short last block), so an interrupted recording is still usable.
// Time resolution is one microsecond: Generate truncates its offsets to it, so a generated trace
// survives a write and a read exactly.
//
// The package is pure data: it never sends a request, never sleeps and never reads the clock.
package trace
