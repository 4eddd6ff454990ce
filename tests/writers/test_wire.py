"""The hand-written wire encoder (writers/wire.py) and the packet sink (writers/chunks.py)
at their edges: every typed annotation leaf at the boundaries of its encoding (one-byte
lengths and values, the cached two-byte values, the int64 range, the interning limit) is
the bytes protobuf's own serialiser gives; and a group's packets reach the stream whole,
in runs of at least a chunk, plain or deflated, with a stream's error raised in the
caller and the deflating thread never left waiting."""

from __future__ import annotations

import io
import random
import threading
import zlib
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from agent_profiler.writers.chunks import THREAD_AFTER, PacketSink, compressed_record
from agent_profiler.writers.wire import (
    annotation_encoder,
    field_bytes,
    name_iid_field,
    record,
    string_iid_field,
    varint,
)

_DEBUG_ANNOTATIONS = b"\x22"  # TrackEvent field 4, length-delimited
_UNIQUE = frozenset({"id"})
_MAX_INTERNED = 64


class _Kind(StrEnum):
    PROMPT = "prompt"


class _Level(IntEnum):
    HIGH = 300


def _encoder() -> tuple[Any, Any, dict[str, int], dict[str, int]]:
    names: dict[str, int] = {}
    strings: dict[str, int] = {}
    name_fields: dict[str, bytes] = {}
    string_fields: dict[str, bytes] = {}

    def new_name(name: str) -> bytes:
        names[name] = len(names) + 1
        field = name_fields[name] = name_iid_field(names[name])
        return field

    def new_string(text: str) -> bytes:
        strings[text] = len(strings) + 1
        field = string_fields[text] = string_iid_field(strings[text])
        return field

    annotation, entries, _ = annotation_encoder(
        name_fields, new_name, string_fields, new_string, _UNIQUE, _MAX_INTERNED
    )
    return annotation, entries, names, strings


def _reference(
    target: Any, name: str | None, value: Any, names: dict[str, int], strings: dict[str, int]
) -> None:
    """What the writer did with protobuf objects before it wrote bytes (TRACE_CONTRACT §4)."""
    if name is not None:
        target.name_iid = names[name]
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        value = int(value)
        if 0 <= value < 2**64:
            target.uint_value = value
        elif -(2**63) <= value < 0:
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        value = str(value)
        if name in _UNIQUE or len(value) > _MAX_INTERNED:
            target.string_value = value
        else:
            target.string_value_iid = strings[value]
    elif isinstance(value, dict):
        for key, item in value.items():
            _reference(target.dict_entries.add(), str(key), item, names, strings)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _reference(target.array_values.add(), None, item, names, strings)


_EDGES: dict[str, Any] = {
    # uint_value: one-byte values, the cached values below 2**14, the varint's lengths
    **{f"u{v}": v for v in (0, 1, 127, 128, 129, 16383, 16384, 2**21 - 1, 2**21, 2**64 - 1)},
    "beyond": 2**64,  # out of the wire's range: its digits, as a string
    "negative": -1,
    "lowest": -(2**63),
    "below": -(2**63) - 1,
    "level": _Level.HIGH,  # an int subclass
    "kind": _Kind.PROMPT,  # a str subclass
    "yes": True,
    "no": False,
    "ratio": 0.5,
    "short": "interned",
    "at-limit": "x" * _MAX_INTERNED,
    "past-limit": "y" * (_MAX_INTERNED + 1),
    # written as they are: lengths around the one-byte limit, and an id of any length
    **{f"s{n}": "z" * n for n in (127, 128, 200)},
    **{f"id-{n}": "w" * n for n in (3, 127, 128)},
    "nested": {5: "int key", 7: 300, "deeper": {"u": 16384, "id": "q" * 128}, "empty": []},
    "array": [1, 128, "interned", -5, ("t", 2**64)],
}


def _expected(mapping: dict[str, Any], names: dict[str, int], strings: dict[str, int]) -> bytes:
    event = pb.TrackEvent()
    for key, value in mapping.items():
        _reference(event.debug_annotations.add(), key, value, names, strings)
    return event.SerializeToString()


@pytest.mark.parametrize("rounds", [1, 3])
def test_every_leaf_at_its_edges_is_protobuf_s_bytes(rounds: int) -> None:
    """Each round goes through the caches the first filled: the same bytes again."""
    mapping = {key.replace("id-", "id") if key == "id-3" else key: v for key, v in _EDGES.items()}
    _, entries, names, strings = _encoder()
    encoded = [entries(mapping, _DEBUG_ANNOTATIONS) for _ in range(rounds)]
    expected = _expected(mapping, names, strings)
    assert all(e == expected for e in encoded)


def test_a_unique_key_s_value_is_never_interned() -> None:
    _, entries, names, strings = _encoder()
    mapping = {"id": "abc", "other": "abc"}
    encoded = entries(mapping, _DEBUG_ANNOTATIONS)
    assert strings == {"abc": 1}  # interned once, for "other" only
    assert encoded == _expected(mapping, names, strings)


def test_a_single_annotation_is_protobuf_s_bytes() -> None:
    annotation, _, names, strings = _encoder()
    for name, value in _EDGES.items():
        encoded = annotation(name, value)
        expected = pb.DebugAnnotation()
        _reference(expected, name, value, names, strings)
        assert encoded == expected.SerializeToString(), name


def test_varint_matches_protobuf_for_every_length() -> None:
    lengths = (2**14, 2**21, 2**28, 2**35)  # each boundary of an unrolled length
    edges = (0, 127, 128, *(v + d for v in lengths for d in (-1, 0)), 2**63, 2**64 - 1)
    # and every bit of each unrolled length set and clear (the lengths are worked out
    # as one int of the varint's bytes, group by group), and values of every length
    rng = random.Random(7)
    patterns = [(1 << n) - 1 for n in range(1, 36)] + [0x55555555 >> n for n in range(32)]
    spread = [rng.randrange(1 << bits) for bits in range(1, 64) for _ in range(20)]
    for value in (*edges, *patterns, *spread, -1, -200, -(2**28), -(2**28) - 1, -(2**63)):
        packet = pb.TracePacket(timestamp=value % 2**64)
        assert record(packet.SerializeToString())[2:] == b"\x40" + varint(value), value


# --------------------------------------------------------------------- the packet sink


def _packets(count: int) -> list[bytes]:
    """Valid packets of varied sizes: a time, a sequence, a filler field it does not know."""
    return [
        record(b"\x40" + varint(i) + b"\x50\x01" + field_bytes(2000, bytes(i % 40)))
        for i in range(count)
    ]


class _Recorder(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[int] = []

    def write(self, data: Any) -> int:
        self.writes.append(len(data))
        return super().write(data)


def _records(data: bytes) -> list[bytes]:
    trace = pb.Trace.FromString(data)
    return [packet.SerializeToString() for packet in trace.packet]


def test_plain_runs_are_the_packets_as_they_are_in_runs_of_at_least_a_chunk() -> None:
    packets = _packets(300)
    stream = _Recorder()
    sink = PacketSink(stream, compress=False, chunk=500)
    for packet in packets:
        sink.add(packet)
    assert stream.writes, "a full chunk is written before the end"
    sink.close()
    assert stream.getvalue() == b"".join(packets)
    assert all(size >= 500 for size in stream.writes[:-1])


def test_a_chunk_is_written_as_soon_as_it_is_full() -> None:
    stream = _Recorder()
    sink = PacketSink(stream, compress=False, chunk=10)
    sink.add(b"0123456789")
    assert stream.getvalue() == b"0123456789"
    sink.close()


def test_deflated_runs_hold_whole_packets_and_inflate_to_the_group() -> None:
    packets = _packets(2000)
    stream = _Recorder()
    sink = PacketSink(stream, compress=True, chunk=4096)
    for packet in packets:
        sink.add(packet)
    sink.close()
    assert sink.thread is None
    outer = pb.Trace.FromString(stream.getvalue()).packet
    assert len(outer) > 1
    inflated = []
    for wrapper in outer:
        assert wrapper.ListFields()[0][0].name == "compressed_packets"
        assert len(wrapper.ListFields()) == 1
        inner = zlib.decompress(wrapper.compressed_packets)
        assert _records(inner)  # whole packets: the run parses as a Trace on its own
        inflated.append(inner)
    assert b"".join(inflated) == b"".join(packets)
    assert all(len(run) >= 4096 for run in inflated[:-1])


def test_a_small_group_is_one_deflated_record_without_a_thread() -> None:
    packets = _packets(10)
    stream = io.BytesIO()
    sink = PacketSink(stream, compress=True)
    for packet in packets:
        sink.add(packet)
    sink.close()
    assert stream.getvalue() == compressed_record(b"".join(packets))
    assert zlib.decompress(pb.Trace.FromString(stream.getvalue()).packet[0].compressed_packets)


class _FailingStream(io.BytesIO):
    def write(self, data: Any) -> int:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("compress", [True, False])
def test_a_stream_error_is_raised_in_the_caller_and_nothing_waits(compress: bool) -> None:
    """The thread keeps draining after an error, so the caller never blocks on a full
    queue; the error surfaces at the next chunk or at close."""
    sink = PacketSink(_FailingStream(), compress=compress, chunk=64)
    raised: list[BaseException] = []

    def feed() -> None:
        try:
            for packet in _packets(5000):
                sink.add(packet)
            sink.close()
        except OSError as error:
            raised.append(error)
        finally:
            sink.stop()

    worker = threading.Thread(target=feed, daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "the caller was left waiting on the deflating thread"
    assert raised and raised[0].errno == 28
    assert sink.thread is None


def test_a_deflated_record_is_at_the_chosen_level() -> None:
    """LEVEL (3) was chosen for speed over size (chunks.py): the zlib header of every
    compressed_packets says so (its FLEVEL bits: 1, the "fast" levels 2 to 5; the default
    level 6 would say 2), whether the record is made whole or by the sink's thread."""
    packets = b"".join(_packets(300))
    for data in (compressed_record(packets), _deflated_by_the_sink(packets)):
        deflated = pb.Trace.FromString(data).packet[0].compressed_packets
        assert deflated[0] == 0x78  # deflate, a 32 KB window
        assert deflated[1] >> 6 == 1, hex(deflated[1])
        assert zlib.decompress(deflated) == packets


def _deflated_by_the_sink(packets: bytes) -> bytes:
    """`packets` as the sink's thread deflates them (the chunks before, here)."""
    stream = io.BytesIO()
    sink = PacketSink(stream, compress=True, chunk=len(packets))
    for _ in range(THREAD_AFTER - 1):
        sink.add(packets)
    assert sink.thread is None
    before = len(stream.getvalue())
    sink.add(packets)  # a full chunk: deflated by the thread
    assert sink.thread is not None
    sink.close()
    return stream.getvalue()[before:]


class _Starts:
    """Counts the deflating threads started."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        start = threading.Thread.start

        def counted(thread: threading.Thread) -> None:
            if thread.name == "deflate":
                self.count += 1
            start(thread)

        monkeypatch.setattr(threading.Thread, "start", counted)


def _chunks_deflated(threaded: bool, chunks: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`chunks` full chunks and a last part through a sink; its bytes, and how many
    deflating threads it started."""
    starts = _Starts(monkeypatch)
    stream = io.BytesIO()
    sink = PacketSink(stream, compress=True, chunk=100, threaded=threaded)
    for index in range(chunks):
        sink.add(bytes([index]) * 100)
    sink.add(b"rest")
    sink.close()
    assert sink.thread is None
    return stream.getvalue(), starts.count


def test_a_long_group_deflates_on_a_thread_from_its_chosen_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread pays only beside a long run of encoding (chunks.py): the first chunks are
    deflated here, then one thread takes the rest; the bytes are the same."""
    inline, started = _chunks_deflated(True, THREAD_AFTER - 1, monkeypatch)
    assert started == 0  # a group of fewer chunks never starts one
    long, started = _chunks_deflated(True, 3 * THREAD_AFTER, monkeypatch)
    assert started == 1
    here, started = _chunks_deflated(False, 3 * THREAD_AFTER, monkeypatch)
    assert started == 0  # not threaded: every chunk here
    assert here == long
    assert long == _each_deflated(3 * THREAD_AFTER)
    assert inline == _each_deflated(THREAD_AFTER - 1)


def _each_deflated(chunks: int) -> bytes:
    """What `_chunks_deflated` writes, each record made whole."""
    records = [compressed_record(bytes([i]) * 100) for i in range(chunks)]
    return b"".join(records) + compressed_record(b"rest")


def test_a_sink_made_threaded_after_a_stop_deflates_on_a_new_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`threaded` is switched between runs (writers/runs.py, beside a helper): after
    `stop`, a sink no longer threaded deflates here, and one threaded again starts a
    thread at its next chunk."""
    starts = _Starts(monkeypatch)
    stream = io.BytesIO()
    sink = PacketSink(stream, compress=True, chunk=10)
    for _ in range(THREAD_AFTER):
        sink.add(b"x" * 10)
    assert starts.count == 1
    sink.stop()
    sink.threaded = False
    for _ in range(THREAD_AFTER):
        sink.add(b"y" * 10)
    assert starts.count == 1 and sink.thread is None
    sink.threaded = True
    sink.add(b"z" * 10)
    assert starts.count == 2
    sink.close()
    records = pb.Trace.FromString(stream.getvalue()).packet
    inflated = b"".join(zlib.decompress(r.compressed_packets) for r in records)
    assert inflated == b"x" * 10 * THREAD_AFTER + b"y" * 10 * THREAD_AFTER + b"z" * 10


class _Terminated(SystemExit):
    """What entry.py's SIGTERM handler raises, wherever the main thread is."""


def test_a_signal_while_the_thread_starts_is_what_the_export_ends_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGTERM raised while `Thread.start` waits for the new thread to run ended the
    export as an internal error ("cannot join thread before it is started", from the
    `stop` on the way out) instead of `terminated` (seen in CI: exit 70, not 143)."""

    def interrupted(self: threading.Thread) -> None:
        raise _Terminated(143)  # before the thread ran: its `join` would raise

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    sink = PacketSink(io.BytesIO(), compress=True, chunk=64)
    # WHEN the first full chunk starts the thread and the signal comes then
    with pytest.raises(_Terminated):
        try:
            for packet in _packets(50):
                sink.add(packet)
            sink.close()
        finally:
            sink.stop()  # (as write_group and the one pass clean up)
    # THEN the signal is what left, and nothing is left to join
    assert sink.thread is None
