"""The exported locustfile's Record against the core's fixture of streams.

    python parity.py <tokenmeter_locustfile.py> <stream-cases.json>

Every case of the fixture (crates/tokenmeter-core/tests/fixtures/stream-cases.json,
which the core's RecordBuilder passes in tests/locust_parity.rs) is fed to the
file's Record chunk by chunk; each expected field must come out the same, so a
Locust worker and the browser record one stream alike; and bytes after a closed
stream (the fixture's after_end) change none of its records; prompt headers,
the bodies of plans whose lengths are drawn per request and those of plans sending a
file's prompts (varying-bodies.json; the latter from the prompts file, checked by its
SHA-256) are made as the core makes them. Exits 1 on the first difference, naming the case and
the field.
"""

import importlib.util
import json
import os
import sys
import tempfile


def as_bytes(chunk):
    return chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)


def fed(module, case, reads):
    # Whose stream the case is: the file reads the plan's endpoint kind.
    module.KIND = case.get("endpoint", "chat")
    record = module.Record({"stage": 0, "concurrency": 1, "warmup": False}, 0, 0)
    if case["status"] is not None:
        record.on_headers(case["status"], case["content_type"], case["retry_after"], case["headers_us"])
    for at, data in reads:
        record.on_bytes(data, at)
    return record


def finished(case, record):
    message = "TypeError: network" if case["end"] == "network" else ""
    return record.finish(case["end"], case["end_us"], message)


def after_end(module, fixture):
    """The fixture's after_end property (tests/locust_parity.rs states it): a suffix
    appended to a closed stream's last read, cut anywhere, changes nothing."""
    suffixes = [as_bytes(s) for s in fixture["after_end"]]
    n_closed = 0
    for case in fixture["cases"]:
        reads = [(at, as_bytes(chunk)) for at, chunk in case["chunks"]]
        if not fed(module, case, reads).closed:
            continue
        n_closed += 1
        head, (last_at, last) = reads[:-1], reads[-1]

        def record_cut(tail, cut):
            return finished(case, fed(module, case, head + [(last_at, tail[:cut]), (last_at + 7, tail[cut:])]))

        without = [record_cut(last, cut) for cut in range(len(last) + 1)]
        for i, suffix in enumerate(suffixes):
            tail = last + suffix
            for cut in range(len(tail) + 1):
                with_suffix = record_cut(tail, cut)
                if with_suffix != without[min(cut, len(last))]:
                    print("%s: after_end[%d] appended, the last read cut at byte %d, changed the record:" % (case["name"], i, cut))
                    print("  %r\n  %r" % (with_suffix, without[min(cut, len(last))]))
                    return None
    return n_closed


def main(locustfile, fixture_path):
    spec = importlib.util.spec_from_file_location("tokenmeter_locustfile", locustfile)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.WORKER_ID = "parity:0"
    fixture = json.load(open(fixture_path, encoding="utf-8"))
    cases = fixture["cases"]
    for case in cases:
        reads = [(at, as_bytes(chunk)) for at, chunk in case["chunks"]]
        got = finished(case, fed(module, case, reads))
        for field, want in case["expect"].items():
            if field == "error":
                have = got["error"]["kind"] if got["error"] else None
            elif field == "error_detail":
                have = got["error"]["detail"] if got["error"] else None
            elif field == "retry_after_s":
                have = got["error"].get("retry_after_s") if got["error"] else None
            elif field == "completion_tokens":
                have = got["usage"]["completion_tokens"] if got["usage"] else None
            else:
                have = got.get(field)
            if have != want:
                print("%s: %s is %r, tokenmeter's core says %r" % (case["name"], field, have, want))
                return 1
    n_closed = after_end(module, fixture)
    if n_closed is None:
        return 1
    headers = json.load(open(fixture_path.replace("stream-cases.json", "unique-headers.json"), encoding="utf-8"))["cases"]
    for case in headers:
        have = module.unique_header(case["seed"], case["id"])
        if have != case["header"]:
            print("unique_header(%d, %d) is %r, tokenmeter's core says %r" % (case["seed"], case["id"], have, case["header"]))
            return 1
    # Bodies of plans whose lengths are drawn per request, made from the setup
    # the core writes for each plan.
    varying = json.load(open(fixture_path.replace("stream-cases.json", "varying-bodies.json"), encoding="utf-8"))["cases"]
    n_bodies = 0
    for case in varying:
        for request in case["requests"]:
            made = json.loads(module.varying_body(case["seed"], request["id"], case["bodies"], case["body"]))
            asked = module.asked_tokens(case["seed"], request["id"], case["bodies"])
            if made != request["expect"] or asked != request["asked"]:
                print("request %d of a plan of lengths drawn (%s): the file makes\n  %r (asks %r)\nwhere tokenmeter's core sends\n  %r (asks %r)"
                      % (request["id"], case["bodies"]["varying"]["max_key"], made, asked, request["expect"], request["asked"]))
                return 1
            n_bodies += 1
    # Bodies of plans sending a file's prompts, from the prompts file the core
    # writes beside the locustfile, read as the file reads it (by its SHA-256).
    files = json.load(open(fixture_path.replace("stream-cases.json", "varying-bodies.json"), encoding="utf-8"))["files"]
    n_file_bodies = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, case in enumerate(files):
            path = os.path.join(tmp, "prompts-%d.json" % n)
            with open(path, "w", encoding="utf-8") as f:
                f.write(case["file"])
            bodies = module.read_prompts(case["prompts"], path)
            for request in case["requests"]:
                made = json.loads(module.file_body(case["seed"], request["id"], case["prompts"], bodies))
                asked = module.file_asked(case["seed"], request["id"], case["prompts"])
                if made != request["expect"] or asked != request["asked"]:
                    print("request %d of a plan of a file's prompts (%s, %s): the file makes\n  %r (asks %r)\nwhere tokenmeter's core sends\n  %r (asks %r)"
                          % (request["id"], case["prompts"]["order"], case["prompts"]["max_key"], made, asked, request["expect"], request["asked"]))
                    return 1
                n_file_bodies += 1
            # Another file (one byte changed) is refused before anything is sent.
            with open(path, "w", encoding="utf-8") as f:
                f.write(case["file"] + " ")
            try:
                module.read_prompts(case["prompts"], path)
                print("a prompts file that is not the plan's was read")
                return 1
            except SystemExit as refused:
                if "not the prompts file this plan was exported with" not in str(refused):
                    print("a wrong prompts file was refused with %r" % str(refused))
                    return 1
    print(
        "%d streams recorded as the core records them; nothing after the end of %d of them changed a record; %d prompt headers, %d bodies of lengths drawn and %d of a file's prompts made alike"
        % (len(cases), n_closed, len(headers), n_bodies, n_file_bodies)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
