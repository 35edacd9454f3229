"""The exported locustfile's Record against the core's fixture of streams.

    python parity.py <tokenmeter_locustfile.py> <stream-cases.json>

Every case of the fixture (crates/tokenmeter-core/tests/fixtures/stream-cases.json,
which the core's RecordBuilder passes in tests/locust_parity.rs) is fed to the
file's Record chunk by chunk; each expected field must come out the same, so a
Locust worker and the browser record one stream alike. Exits 1 on the first
difference, naming the case and the field.
"""

import importlib.util
import json
import sys


def main(locustfile, fixture):
    spec = importlib.util.spec_from_file_location("tokenmeter_locustfile", locustfile)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.WORKER_ID = "parity:0"
    cases = json.load(open(fixture, encoding="utf-8"))["cases"]
    stage = {"stage": 0, "concurrency": 1, "warmup": False}
    for case in cases:
        record = module.Record(stage, 0, 0)
        if case["status"] is not None:
            record.on_headers(case["status"], case["content_type"], case["retry_after"], case["headers_us"])
        for at, chunk in case["chunks"]:
            data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
            record.on_bytes(data, at)
        message = "TypeError: network" if case["end"] == "network" else ""
        got = record.finish(case["end"], case["end_us"], message)
        for field, want in case["expect"].items():
            if field == "error":
                have = got["error"]["kind"] if got["error"] else None
            elif field == "retry_after_s":
                have = got["error"].get("retry_after_s") if got["error"] else None
            elif field == "completion_tokens":
                have = got["usage"]["completion_tokens"] if got["usage"] else None
            else:
                have = got.get(field)
            if have != want:
                print("%s: %s is %r, tokenmeter's core says %r" % (case["name"], field, have, want))
                return 1
    print("%d streams recorded as the core records them" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
