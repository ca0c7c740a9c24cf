"""A pipeline to run as a job (docs/JOBS.md): documents of a JSON-lines manifest ({"id", "text"})
cut into chunks of words, each chunk counted, the counts gathered per document.

    python -m rayorch_cpp run python/examples/job_chunks.py:Chunks --input docs.jsonl -o out
    python -m rayorch_cpp submit python/examples/job_chunks.py:Chunks --input docs.jsonl \
        -o /shared/out --address http://HEAD:8265 --wait

Its parameters (``--set chunk_words=20``) are its constructor's; its stages (``--set
count.replicas=4``) are its Modules, by attribute name.
"""

from __future__ import annotations

from collections import Counter

import rayorch_cpp as ro


class Split:
    """A document -> its chunks of ``chunk_words`` words, in order."""

    def __init__(self, chunk_words: int, lowercase: bool) -> None:
        self.chunk_words = chunk_words
        self.lowercase = lowercase

    def run(self, texts: list[object]) -> list[object]:
        out: list[object] = []
        for text in texts:
            if not isinstance(text, str):
                out.append(ro.RecordFailure(f"text must be a string, not {type(text).__name__}"))
                continue
            words = (text.lower() if self.lowercase else text).split()
            out.append(
                [words[i : i + self.chunk_words] for i in range(0, len(words), self.chunk_words)]
            )
        return out


class Count:
    """A chunk -> its word counts (batched across documents)."""

    def run(self, chunks: list[list[str]]) -> list[dict[str, int]]:
        return [dict(Counter(chunk)) for chunk in chunks]


class Gather:
    """A document's chunk counts -> its record."""

    def run(self, ids: list[str], counts: list[list[dict[str, int]]]) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for doc, per_chunk in zip(ids, counts, strict=True):
            total: Counter[str] = Counter()
            for c in per_chunk:
                total.update(c)
            top = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
            out.append(
                {"id": doc, "chunks": len(per_chunk), "words": sum(total.values()), "top": top}
            )
        return out


class Chunks(ro.Pipeline):
    def __init__(self, chunk_words: int = 50, lowercase: bool = True) -> None:
        if chunk_words < 1:
            raise ValueError(f"chunk_words must be at least 1, not {chunk_words}")
        self.split = ro.Module(Split, batch_size=8).pre_init(chunk_words, lowercase)
        self.count = ro.Module(Count, replicas=2, batch_size=64)
        self.gather = ro.Module(Gather, batch_size=8)

    def forward(self, id: ro.Port, text: ro.Port) -> ro.Port:  # noqa: A002 - the column's name
        chunks = ro.F.expand(self.split(text))
        return self.gather(id, ro.F.reduce(self.count(chunks)))
