"""An independent reader for what sluice writes: TFRecord framing with its
masked CRC32C, and the protobuf wire format of tf.train.Example, in plain
Python (standard library only). It shares no code with sluice, so a file it
reads back correctly was written in TensorFlow's format, not merely in a
format sluice agrees with itself about."""

import gzip
import struct
import zlib

_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes, value: int = 0) -> int:
    """CRC32C of data, continuing from the CRC `value` of earlier bytes."""
    crc = value ^ 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path: str):
    """Yields (offset, payload); raises ValueError on any damage."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    elif raw[:1] == b"\x78" and len(raw) >= 12 and masked_crc(raw[:8]) != struct.unpack("<I", raw[8:12])[0]:
        raw = zlib.decompress(raw)
    pos = 0
    while pos < len(raw):
        if len(raw) - pos < 12:
            raise ValueError(f"{path}: truncated header at {pos}")
        (length,) = struct.unpack("<Q", raw[pos:pos + 8])
        (lcrc,) = struct.unpack("<I", raw[pos + 8:pos + 12])
        if masked_crc(raw[pos:pos + 8]) != lcrc:
            raise ValueError(f"{path}: length CRC at {pos}")
        data = raw[pos + 12:pos + 12 + length]
        if len(data) != length or len(raw) < pos + 16 + length:
            raise ValueError(f"{path}: truncated record at {pos}")
        (dcrc,) = struct.unpack("<I", raw[pos + 12 + length:pos + 16 + length])
        if masked_crc(data) != dcrc:
            raise ValueError(f"{path}: data CRC at {pos}")
        yield pos, data
        pos += 16 + length


def _varint(buf: bytes, i: int):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes):
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = _varint(buf, i)
        elif wire == 1:
            val, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            val, i = buf[i:i + n], i + n
        elif wire == 5:
            val, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield num, wire, val


def parse_example(buf: bytes) -> dict:
    """tf.train.Example -> {key: ('bytes'|'float'|'int64', [values])}."""
    out = {}
    for num, _, features in _fields(buf):
        assert num == 1
        for fnum, _, entry in _fields(features):
            assert fnum == 1
            key, value = None, b""
            for enum_, _, v in _fields(entry):
                if enum_ == 1:
                    key = v.decode()
                elif enum_ == 2:
                    value = v
            kind, values = None, []
            for knum, _, lst in _fields(value):
                kind = {1: "bytes", 2: "float", 3: "int64"}[knum]
                for vnum, wire, v in _fields(lst):
                    if kind == "bytes":
                        values.append(bytes(v))
                    elif kind == "float":
                        values += list(struct.unpack(f"<{len(v) // 4}f", v)) if wire == 2 else [struct.unpack("<f", v)[0]]
                    else:
                        if wire == 2:
                            j = 0
                            while j < len(v):
                                x, j = _varint(v, j)
                                values.append(x - (1 << 64) if x >= 1 << 63 else x)
                        else:
                            values.append(v - (1 << 64) if v >= 1 << 63 else v)
            out[key] = (kind, values)
    return out
