"""The simulated document workload's stages as RayModule UDF classes: the reference peer and
this project's Ray peer run the same classes, with their own `ro` module.

The classes' actors run in worker processes that cannot import this module (nor `common`).
`make_stages` therefore defines them inside a function: Ray pickles such classes by value,
together with the numbers they close over.
"""

import os
import time


def make_stages(ro, stage_seconds, payload, load):
    """(Render, Ocr, Assemble) for the costs `stage_seconds` (common.stage_seconds) and pages
    carrying up to `payload` bytes (0: none); failures are `ro.GroupFailure`. Ocr takes
    (events_dir, poisoned documents). The Render and Ocr constructors first call `load(stage)`
    (common.model_loader: the startup regime's model loads)."""
    render_per_page, ocr_per_batch, ocr_per_page, assemble_per_doc, assemble_per_page = (
        stage_seconds
    )
    payload_min = payload // 16

    def payload_size(doc, page):
        # common.payload_size, inlined.
        return payload_min + (int(doc) * 7919 + int(page) * 104729) % (payload - payload_min + 1)

    class Render:
        def __init__(self):
            load("render")

        def run(self, docs):
            out = []
            for doc, n in docs:
                time.sleep(n * render_per_page)
                out.append([(doc, i) for i in range(n)])
            return out

    class Ocr:
        def __init__(self, events_dir, poisoned):
            load("ocr")
            self.poisoned = poisoned
            self.log = None
            if events_dir:
                self.log = open(os.path.join(events_dir, f"ocr-{os.getpid()}-{id(self)}.log"), "a")
                self.log.write(f"ready {time.time()}\n")
                self.log.flush()

        def run(self, pages):
            t0 = time.time()
            time.sleep(ocr_per_batch + len(pages) * ocr_per_page)
            out = [
                ro.GroupFailure(f"page 0 of document {doc} is unreadable")
                if i == 0 and doc in self.poisoned
                else (
                    (doc * 1000000 + i, bytes(payload_size(doc, i)))
                    if payload
                    else doc * 1000000 + i
                )
                for doc, i in pages
            ]
            if self.log:
                self.log.write(f"batch {len(pages)} {t0} {time.time()}\n")
                self.log.flush()
            return out

    class Assemble:
        def run(self, values, docs):
            out = []
            for v, (doc, _) in zip(values, docs):
                time.sleep(assemble_per_doc + len(v) * assemble_per_page)
                if payload:  # (value, payload) pairs: keep the values, count the payload bytes
                    out.append((doc, [x for x, _ in v], sum(len(b) for _, b in v)))
                else:
                    out.append((doc, list(v)))
            return out

    return Render, Ocr, Assemble
