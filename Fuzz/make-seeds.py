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
    variants = {0: body, 1: gzip.compress(body), 2: zlib.compress(body)}
    variants[3] = zlib.compress(body)[2:-4]  # raw deflate (encoding byte 3 % 3 == 0 would be identity; use 2 below)
    for coding, payload in ((0, variants[0]), (1, variants[1]), (2, variants[2]), (2, variants[3])):
        suffix = {0: "json", 1: "gz", 2: "zlib"}[coding] if payload is not variants[3] else "raw"
        with open(os.path.join(out, f"{name}.{suffix}"), "wb") as f:
            f.write(bytes([coding, 3]) + payload)
# Two gzip members, and a truncated stream.
body = documents["valid"]
with open(os.path.join(out, "members.gz"), "wb") as f:
    f.write(bytes([1, 0]) + gzip.compress(body[:50]) + gzip.compress(body[50:]))
with open(os.path.join(out, "truncated.gz"), "wb") as f:
    f.write(bytes([1, 1]) + gzip.compress(body)[:-7])
