"""Generated document corpora for the bundled tracks: deterministic, seeded, sized by track params.

Each bundled track ships a `corpus.py` next to its track.json with
  DEFAULTS   the corpus parameters it reads (always doc_count and seed) and their defaults;
  documents(options, rng)  yielding the documents;
  TEST_MODE_LAST (optional) True when Rally's --test-mode must index the last 1000 documents,
                 not the first (source-filtering: its exports read the newest, written last).
Generation writes, into the (writable) prepared track directory:
  documents.json      one JSON document per line, the file Rally bulk-indexes;
  documents-1k.json   its first (or last) 1000 lines, which Rally's --test-mode looks for;
  corpus.json         the corpus definition track.json includes, with the exact
                      document-count and uncompressed-bytes Rally checks the file against.
The same parameters and seed always give byte-identical files, so two experiments that differ
only in index settings index exactly the same documents. That also lets local mode keep them:
with a cache folder, a corpus is generated once per generator code and parameters, into the
cache, and linked from there (a 500 MB corpus takes about a minute to generate).
"""

from __future__ import annotations

import collections
import hashlib
import importlib.util
import itertools
import json
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

DOCUMENTS = "documents.json"
TEST_MODE_DOCUMENTS = "documents-1k.json"  # the name Rally's --test-mode derives from DOCUMENTS
TEST_MODE_COUNT = 1000
CORPUS_DEFINITION = "corpus.json"
GENERATOR = "corpus.py"
CORPUS_FILES = (DOCUMENTS, TEST_MODE_DOCUMENTS, CORPUS_DEFINITION)


@dataclass(frozen=True)
class Corpus:
    name: str
    document_count: int
    uncompressed_bytes: int
    options: dict[str, Any]

    def documents_in(self, size_bytes: int) -> int:
        """How many documents of this corpus make size_bytes on average (at least one)."""
        return max(1, round(size_bytes * self.document_count / self.uncompressed_bytes))


def load_generator(track_dir: Path) -> ModuleType:
    # Loaded by path: track folder names such as "source-filtering" are not Python identifiers.
    path = Path(track_dir) / GENERATOR
    spec = importlib.util.spec_from_file_location(f"esbench_track_corpus_{Path(track_dir).name.replace('-', '_')}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_options(generator: ModuleType, track_params: dict[str, Any]) -> dict[str, Any]:
    """The generator's parameters: its defaults overridden by the matching track params."""
    options = dict(generator.DEFAULTS)
    options.update({k: track_params[k] for k in generator.DEFAULTS if k in track_params})
    if int(options["doc_count"]) < 1:
        raise ValueError(f"doc_count must be at least 1, got {options['doc_count']}")
    return options


def generate(track_dir: Path, name: str, track_params: dict[str, Any], cache: Path | None = None) -> Corpus:
    track_dir = Path(track_dir)
    generator = load_generator(track_dir)
    options = corpus_options(generator, track_params)
    if cache is None:
        return _generate(track_dir, name, generator, options)
    # The generator's code (its own and these helpers) and its options make the documents.
    fingerprint = hashlib.sha256(b"\0".join([
        (track_dir / GENERATOR).read_bytes(), Path(__file__).read_bytes(), name.encode(),
        json.dumps(options, sort_keys=True).encode()])).hexdigest()[:24]
    kept = Path(cache) / fingerprint
    if not (kept / CORPUS_DEFINITION).is_file():
        kept.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=kept.parent, prefix=f".{fingerprint}-"))
        _generate(staging, name, generator, options)
        staging.rename(kept)  # whole or not at all, should two runs generate it at once
    # Linked, not copied: a copy of gigabytes is written back to the disk while the race that
    # follows is measured (its reads and writes, device-wide, count in every task's I/O).
    for file in CORPUS_FILES:
        (track_dir / file).symlink_to(kept / file)
    document = json.loads((kept / CORPUS_DEFINITION).read_text())["documents"][0]
    return Corpus(name=name, document_count=document["document-count"],
                  uncompressed_bytes=document["uncompressed-bytes"], options=options)


def _generate(folder: Path, name: str, generator: ModuleType, options: dict[str, Any]) -> Corpus:
    rng = random.Random(int(options["seed"]))
    last = getattr(generator, "TEST_MODE_LAST", False)
    sample: collections.deque[bytes] = collections.deque(maxlen=TEST_MODE_COUNT)
    count = 0
    size = 0
    with open(folder / DOCUMENTS, "wb") as out:
        for doc in itertools.islice(generator.documents(options, rng), int(options["doc_count"])):
            line = (json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
            out.write(line)
            if last or count < TEST_MODE_COUNT:
                sample.append(line)  # full, a deque drops its oldest line
            count += 1
            size += len(line)
    (folder / TEST_MODE_DOCUMENTS).write_bytes(b"".join(sample))
    definition = {
        "name": name,
        "documents": [{"source-file": DOCUMENTS, "document-count": count, "uncompressed-bytes": size}],
    }
    (folder / CORPUS_DEFINITION).write_text(json.dumps(definition, indent=2))
    return Corpus(name=name, document_count=count, uncompressed_bytes=size, options=options)


# --- helpers for the track generators ---------------------------------------------------

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


class Vocabulary:
    """Pseudo-words with a Zipf-like frequency: text that compresses and matches like prose."""

    def __init__(self, size: int = 5000):
        # Its own fixed seed: the words (and so the words tracks query for) are the same
        # whatever the corpus seed; the seed only changes which words each document gets.
        rng = random.Random(size)
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < size:
            word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        self._cum_weights = list(itertools.accumulate(1.0 / rank for rank in range(1, size + 1)))

    def text(self, rng: random.Random, words: int) -> str:
        return " ".join(rng.choices(self.words, cum_weights=self._cum_weights, k=words))

    def text_of_bytes(self, rng: random.Random, size: int) -> str:
        """Text of about `size` bytes (average word plus space is about 7 bytes)."""
        text = self.text(rng, max(1, size // 7))
        return text[:size].rstrip()


_LOG_START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
_SERVICES = ["api", "auth", "billing", "search", "checkout", "inventory", "gateway", "mailer"]
_LEVELS = ["INFO"] * 85 + ["WARN"] * 10 + ["ERROR"] * 4 + ["DEBUG"]
_STATUSES = [200] * 80 + [201] * 5 + [204] * 3 + [301, 302, 304] + [400] * 2 + [401, 403] + [404] * 3 + [500, 503]
_TAGS = ["prod", "eu", "us", "canary", "batch", "web", "mobile", "internal"]


def log_event(i: int, rng: random.Random, vocabulary: Vocabulary, message_bytes: int | None = None) -> dict[str, Any]:
    """One log event (the shape of the indexing and codec-search corpora). With message_bytes,
    its message is about that long (uniform 0.5x-1.5x), for documents of a realistic size;
    else 8 to 30 words, as a short log line."""
    timestamp_ms = _LOG_START_MS + i * 7 + rng.randrange(7)
    seconds, millis = divmod(timestamp_ms, 1000)
    service = rng.choice(_SERVICES)
    return {
        "@timestamp": f"{_iso_seconds(seconds)}.{millis:03d}Z",
        "host": f"host-{rng.randrange(50):02d}",
        "service": service,
        "level": rng.choice(_LEVELS),
        "status": rng.choice(_STATUSES),
        "bytes": int(rng.lognormvariate(8, 1.5)),
        "duration_ms": round(rng.lognormvariate(3, 1), 3),
        "client_ip": f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
        "path": f"/{service}/{vocabulary.text(rng, 1)}/{rng.randrange(1000)}",
        "tags": rng.sample(_TAGS, rng.randint(0, 3)),
        "message": vocabulary.text_of_bytes(rng, int(rng.uniform(0.5, 1.5) * message_bytes)) if message_bytes
        else vocabulary.text(rng, rng.randint(8, 30)),
    }


def _iso_seconds(epoch_seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_seconds))
