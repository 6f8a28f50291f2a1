"""Load: trace files (every format in :mod:`agentab.formats`) into run and step tables.

:func:`load_traces` reads files, folders and in-memory records into a :class:`Traces` (``runs`` and ``steps``
tables, plus the rejected records with their reasons); :func:`read_traces` is the same with the options of a
lenient load. :func:`load_results` reads per-run results tables (CSV, TSV, Parquet, flat JSON Lines,
DataFrames) with ``fields=`` and ``where=``. Large JSON Lines files are read by several processes
(:mod:`agentab.traces._parallel`).
"""

from agentab.traces._load import SUFFIXES, load_traces
from agentab.traces._results import OUTCOME_CANDIDATES, column_hint, is_results_table, load_results
from agentab.traces._tables import Traces, read_traces
from agentab.traces.summary import format_summary, labels, share_of_known, summarize, summarize_scores

__all__ = ["OUTCOME_CANDIDATES", "SUFFIXES", "Traces", "column_hint", "format_summary", "is_results_table", "labels",
           "load_results", "load_traces", "read_traces", "share_of_known", "summarize",
           "summarize_scores"]
