"""Load: trace files (every format in :mod:`agentab.formats`) into run and step tables.

:func:`load_traces` reads files, folders and in-memory records into a :class:`Traces` (``runs`` and ``steps``
tables, plus the rejected records with their reasons); :func:`read_traces` is the same with the options of a
lenient load. Large JSON Lines files are read by several processes (:mod:`agentab.traces._parallel`).
"""

from agentab.traces._load import SUFFIXES, load_traces
from agentab.traces._tables import Traces, read_traces
from agentab.traces.summary import format_summary, labels, share_of_known, summarize, summarize_scores

__all__ = ["SUFFIXES", "Traces", "format_summary", "labels", "load_traces", "read_traces", "share_of_known", "summarize",
           "summarize_scores"]
