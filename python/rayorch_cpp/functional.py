"""Structural operators: expand, reduce, filter, broadcast and their aligned forms.

They declare Domains and lineage while ``forward`` is traced; they run no code.
"""

from __future__ import annotations

from ._tracing import Port, active_trace


def expand(port: Port) -> Port:
    """Each element of a list-valued Call output becomes an ordered child Entity in a new
    child Domain. The producing UDF must return a list or tuple for that output (anything
    else is a contract error that aborts the run). A Port can be expanded once."""
    trace = active_trace("F.expand")
    return trace.ports(trace.core.add_expand([trace.port(port, "F.expand")]))[0]


def expand_aligned(*ports: Port) -> tuple[Port, ...]:
    """Several list outputs of the same Call expanded as one Expansion (one shared child
    Domain); the lists must have equal lengths per row."""
    trace = active_trace("F.expand_aligned")
    ids = [trace.port(p, "F.expand_aligned") for p in ports]
    return trace.ports(trace.core.add_expand(ids))


def reduce(port: Port, *, members: Port | None = None) -> Port:
    """Gathers the surviving child values of each parent, in ordinal order, as one Python
    list in the parent Domain. ``members`` (a Port of the same child Domain) decides which
    children are gathered: PRESENT members are, DROPPED ones are left out, a FAILED or
    SUPPRESSED member suppresses the whole group."""
    return reduce_aligned(port, members=members)[0]


def reduce_aligned(*ports: Port, members: Port | None = None) -> tuple[Port, ...]:
    """Several child Ports gathered with one membership (``members``, else the first
    Port's)."""
    trace = active_trace("F.reduce_aligned" if len(ports) != 1 else "F.reduce")
    ids = [trace.port(p, "F.reduce") for p in ports]
    member = -1 if members is None else trace.port(members, "F.reduce members")
    return trace.ports(trace.core.add_reduce(ids, member))


def filter(port: Port, mask: Port) -> Port:  # noqa: A001 - the reference's spelling
    """Passes ``port`` where ``mask`` is True and drops it where False (same Domain). The
    mask's values must be ``bool``; it must be a Call output or a source column (or a
    filter or broadcast of one)."""
    trace = active_trace("F.filter")
    return Port(
        trace,
        trace.core.add_filter(
            trace.port(port, "F.filter source"), trace.port(mask, "F.filter mask")
        ),
    )


def broadcast(port: Port, *, like: Port) -> Port:
    """Makes an ancestor's value available in the (descendant) Domain of ``like``."""
    trace = active_trace("F.broadcast")
    return Port(
        trace,
        trace.core.add_broadcast(
            trace.port(port, "F.broadcast source"), trace.port(like, "F.broadcast like")
        ),
    )


__all__ = ["broadcast", "expand", "expand_aligned", "filter", "reduce", "reduce_aligned"]
