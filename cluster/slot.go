package cluster

import "strings"

// KeySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM: polynomial 0x1021, initial
// value 0, no reflection) of the key, or of its hash tag, modulo 16384. The hash tag is the part
// between the first '{' and the next '}' when that part is non-empty, so "rl:{t1}:a" and
// "rl:{t1}:b" share a slot. It allocates nothing.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^key[k]]
	}
	return int(crc) % TotalSlots
}

// crc16Table holds CRC16/XMODEM of every byte value, built once at init.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
