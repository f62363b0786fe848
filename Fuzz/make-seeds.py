#!/usr/bin/env python3
"""Writes Fuzz/seeds: valid and near-valid batches, each prefixed with the two
harness bytes (encoding: 0 identity, 1 gzip, 2 deflate; chunk size)."""
import gzip, json, os, zlib

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "seeds")
os.makedirs(out, exist_ok=True)
NOW = 1763719198.0

def sample(**over):
    s = {"t": NOW, "event": "show", "language": "ja-JP", "orientation": "portrait", "keyboard_type": "default",
         "height": 392.0, "accessory_height": 48.0, "safe_area_bottom": 34.0, "duration": 0.25, "curve": 7,
         "cold_start_ms": 412.5, "preloaded": False, "floating": False, "hardware_keyboard": False}
    s.update(over)
    return s

def batch(samples, **over):
    b = {"batch_id": "0f8fad5b-d9cb-469f-a165-70867728950e",
         "device": {"model": "iPhone17,1", "os": "26.1", "app": "com.example.chat", "app_version": "3.2.0"},
         "samples": samples}
    b.update(over)
    return json.dumps(b).encode()

documents = {
    "valid": batch([sample(), sample(event="change", duration=0, cold_start_ms=None), sample(event="hide")]),
    "hardware": batch([sample(height=55, hardware_keyboard=True, accessory_height=0, safe_area_bottom=0)]),
    "bad-samples": batch([sample(curve=16), sample(height="392"), sample(t=NOW - 40 * 86400), sample(language="a b")]),
    "bad-device": batch([sample()], device={"model": "iPhone 17", "os": "x"}),
    "nulls": batch([sample(keyboard_type=None, preloaded=None)]),
    "unicode": batch([sample(language="zh-Hans")], device={"model": "iPad14,3", "os": "18.6.2", "app": "\u00e9\ud83d\ude00"}),
    "deep": b"[" * 40 + b"]" * 40,
    "numbers": b'{"a":[1e308,-0,0.5e-320,123456789012345678901234567890]}',
    "escapes": b'{"batch_id":"\\u0030f8fad5b-d9cb-469f-a165-70867728950e","x":"\\ud83d\\ude00\\n"}',
}
for name, body in documents.items():
    variants = {0: body, 1: gzip.compress(body, mtime=0), 2: zlib.compress(body)}
    variants[3] = zlib.compress(body)[2:-4]  # raw deflate (encoding byte 3 % 3 == 0 would be identity; use 2 below)
    for coding, payload in ((0, variants[0]), (1, variants[1]), (2, variants[2]), (2, variants[3])):
        suffix = {0: "json", 1: "gz", 2: "zlib"}[coding] if payload is not variants[3] else "raw"
        with open(os.path.join(out, f"{name}.{suffix}"), "wb") as f:
            f.write(bytes([coding, 3]) + payload)
# Two gzip members, and a truncated stream.
body = documents["valid"]
with open(os.path.join(out, "members.gz"), "wb") as f:
    f.write(bytes([1, 0]) + gzip.compress(body[:50], mtime=0) + gzip.compress(body[50:], mtime=0))
with open(os.path.join(out, "truncated.gz"), "wb") as f:
    f.write(bytes([1, 1]) + gzip.compress(body, mtime=0)[:-7])

# Whole gzip members (BodyInflater's one-call libdeflate path) and the cases it must hand to zlib.
import struct

def write(name, coding, chunk, payload):
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([coding, chunk]) + payload)

member = gzip.compress(body, mtime=0)
def with_isize(data, isize):
    return data[:-4] + struct.pack("<I", isize & 0xFFFFFFFF)
write("whole.gz", 1, 255, member)                                          # one chunk: the libdeflate path
write("whole-chunked.gz", 1, 0, member)                                    # 1-byte chunks, same path at finish()
write("isize-small.gz", 1, 255, with_isize(member, len(body) - 1))         # ISIZE lies low
write("isize-large.gz", 1, 255, with_isize(member, len(body) + 1))         # ISIZE lies high
write("isize-huge.gz", 1, 255, with_isize(member, 0xFFFFFFFF))             # over the cap and the 1032x ratio
write("isize-zero.gz", 1, 255, with_isize(member, 0))
header = bytearray(member[:10]); header[3] |= 0x02                       # FHCRC with the right header CRC
fhcrc = bytes(header) + struct.pack("<H", zlib.crc32(bytes(header)) & 0xFFFF) + member[10:]
write("fhcrc.gz", 1, 255, fhcrc)
write("fhcrc-wrong.gz", 1, 255, bytes(header) + b"\x00\x00" + member[10:])  # zlib refuses, libdeflate would not
named = bytearray(member[:10]); named[3] |= 0x08 | 0x10 | 0x04             # FEXTRA, FNAME, FCOMMENT
write("named.gz", 1, 255, bytes(named) + b"\x04\x00ab\x00\x00" + b"batch.json\x00" + b"a comment\x00" + member[10:])
write("two-members.gz", 1, 255, gzip.compress(body[:50], mtime=0) + gzip.compress(body[50:], mtime=0))
write("trailing-garbage.gz", 1, 255, member + b"xx")
write("trailing-magic.gz", 1, 255, member + b"\x1f")
write("trailing-zero.gz", 1, 255, member + b"\x00")
write("truncated-trailer.gz", 1, 255, member[:-1])
write("stored.gz", 1, 255, gzip.compress(body, compresslevel=0, mtime=0))
write("empty.gz", 1, 255, gzip.compress(b"", mtime=0))

class Bits:
    """DEFLATE's bit packing: values least significant bit first, Huffman codes most significant first."""
    def __init__(self):
        self.acc, self.n, self.data = 0, 0, bytearray()
    def put(self, value, count):
        self.acc |= value << self.n
        self.n += count
        while self.n >= 8:
            self.data.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8
    def code(self, code, length):
        self.put(int(format(code, f"0{length}b")[::-1], 2), length)
    def bytes(self):
        return bytes(self.data) + (bytes([self.acc]) if self.n else b"")

def canonical(lengths):
    codes, code, nxt = {}, 0, {}
    for bits in range(1, 16):
        code = (code + sum(1 for l in lengths if l == bits - 1 and bits > 1)) << 1
        nxt[bits] = code
    for sym, l in enumerate(lengths):
        if l:
            codes[sym] = (nxt[l], l)
            nxt[l] += 1
    return codes

def complete_lengths(symbols, size):
    """A complete code over `symbols` (at least two): lengths k-1 and k."""
    n = len(symbols)
    k = (n - 1).bit_length()
    lengths = [0] * size
    for i, sym in enumerate(sorted(symbols)):
        lengths[sym] = k - 1 if i < (1 << k) - n else k
    return lengths

def gzip_member(deflate, data):
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflate + struct.pack("<II", zlib.crc32(data), len(data))

def overrun_member(data):
    """One dynamic block whose last code-length repeat runs two past the end: libdeflate accepts it, zlib
    refuses it ("invalid bit length repeat"); the CRC is right, so only GzipMemberShape keeps them apart."""
    litlen = complete_lengths(set(data) | {256}, 257)
    sequence = litlen + [1]  # the first of two distance lengths; a repeat of 3 supplies the second, and 2 more
    pre_symbols = set(sequence) | {16}
    pre = complete_lengths(pre_symbols, 19)
    order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
    hclen = max(i for i, s in enumerate(order) if pre[s]) + 1
    bits = Bits()
    bits.put(1, 1); bits.put(2, 2)
    bits.put(257 - 257, 5); bits.put(2 - 1, 5); bits.put(hclen - 4, 4)
    for s in order[:hclen]:
        bits.put(pre[s], 3)
    pcodes = canonical(pre)
    for l in sequence:
        bits.code(*pcodes[l])
    bits.code(*pcodes[16]); bits.put(0, 2)
    lcodes = canonical(litlen)
    for byte in data:
        bits.code(*lcodes[byte])
    bits.code(*lcodes[256])
    return gzip_member(bits.bytes(), data)

def fixed_286_member():
    """A fixed block using literal/length symbol 286: zlib refuses it ("invalid literal/length code"),
    libdeflate reads it as a 258-byte match; the CRC is of libdeflate's reading."""
    bits = Bits()
    bits.put(1, 1); bits.put(1, 2)
    bits.code(0x30 + ord("a"), 8)        # literal 'a'
    bits.code(0b11000000 + (286 - 280), 8)  # symbol 286
    bits.code(0, 5)                      # distance 1
    bits.code(0, 7)                      # end of block
    return gzip_member(bits.bytes(), b"a" * 259)

write("overrun.gz", 1, 255, overrun_member(body))
write("fixed-286.gz", 1, 255, fixed_286_member())
