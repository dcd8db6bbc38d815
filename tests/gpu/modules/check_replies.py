#!/usr/bin/env python3
"""Checks what an untrusted client received from AgileOS (client/common/reply_trace.h).

Usage: check_replies.py --protected BEGIN END [--forbid TEXT]... TRACE...
Each TRACE is a sequence of records: a 4-byte little-endian length and a serialized message.
Fails (exit 1, one line per finding) if any record holds
  - a value in [BEGIN, END) (a protected address: the I/O aperture, the module range or the guard
    zone) at any byte offset, read as a protobuf varint (how integer fields travel) or as a
    64-bit little-endian word (fixed64, bytes), or written as hex or decimal text;
  - any --forbid text (a service socket path, a device path, the service's root directory).
A descriptor cannot travel in these messages (they are bytes on a stream or in shared memory;
the client never receives SCM_RIGHTS), so an address or a path is what could leak.
"""
import re
import struct
import sys


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at + 4 <= len(data):
        (length,) = struct.unpack_from("<I", data, at)
        yield data[at + 4 : at + 4 + length]
        at += 4 + length


def main(argv):
    protected = None
    forbid = []
    traces = []
    i = 0
    while i < len(argv):
        if argv[i] == "--protected":
            protected = (int(argv[i + 1], 0), int(argv[i + 2], 0))
            i += 3
        elif argv[i] == "--forbid":
            forbid.append(argv[i + 1].encode())
            i += 2
        else:
            traces.append(argv[i])
            i += 1
    if protected is None or not traces:
        print(__doc__, file=sys.stderr)
        return 2
    begin, end = protected
    findings = []
    count = 0
    total = 0
    for path in traces:
        for index, record in enumerate(records(path)):
            count += 1
            total += len(record)
            for offset in range(0, len(record)):
                if offset + 8 <= len(record):
                    (value,) = struct.unpack_from("<Q", record, offset)
                    if begin <= value < end:
                        findings.append(f"{path} record {index}: protected address {value:#x} at byte {offset}")
                value, shift = 0, 0
                for byte in record[offset : offset + 10]:
                    value |= (byte & 0x7F) << shift
                    shift += 7
                    if byte < 0x80:
                        if begin <= value < end:
                            findings.append(
                                f"{path} record {index}: protected address {value:#x} as a varint at byte {offset}")
                        break
            for match in re.finditer(rb"(?:0x)?[0-9a-fA-F]{11,16}|[0-9]{13,20}", record):
                text = match.group(0)
                for base in (16, 10):
                    try:
                        value = int(text, base) if not text.lower().startswith(b"0x") else int(text, 16)
                    except ValueError:
                        continue
                    if begin <= value < end:
                        findings.append(f"{path} record {index}: protected address as text {text!r}")
            for text in forbid:
                if text and text in record:
                    findings.append(f"{path} record {index}: contains {text.decode(errors='replace')!r}")
    if count == 0:
        findings.append("no replies were recorded")
    for line in findings[:50]:
        print(line)
    print(f"{count} replies ({total} bytes) from {len(traces)} sessions inspected: {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
