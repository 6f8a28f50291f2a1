"""The task catalogue of the example experiment: the simulated code base, the bugs, and one task's attributes.

Every task (:class:`Task`, drawn by :func:`make_task` from its own random stream) has a latent difficulty, a
code location (area, module, files and their sizes), a bug topic (documentation query, reference URL, the
sequence of edits that fixes it), perhaps a dependency to add and a prompt length; all its runs, in both
arms, share them. See :mod:`agentab.datasets.example` for the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentab.datasets._streams import Draws, task_rng

__all__ = ["DEPENDENCIES", "REQUIREMENTS", "TASK_DIFFICULTY_SD", "Task", "Topic", "make_task"]

TASK_DIFFICULTY_SD: float = 1.5
"""Standard deviation of the per-task latent difficulty (logit scale)."""

_AREAS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("billing", ("invoice", "tax", "discounts", "ledger"),
     ("compute_total", "apply_discount", "post_entry")),
    ("auth", ("tokens", "sessions", "passwords", "oauth"),
     ("refresh_token", "verify_password", "create_session")),
    ("search", ("indexer", "query_parser", "ranking", "highlight"),
     ("build_index", "parse_query", "score_document")),
    ("notifications", ("email", "sms", "templates", "digest"),
     ("render_template", "send_email", "build_digest")),
    ("reports", ("exporter", "aggregates", "csv_writer", "charts"),
     ("export_rows", "aggregate_by_day", "write_csv")),
    ("inventory", ("stock", "warehouse", "reservations", "sku"),
     ("reserve_items", "adjust_stock", "lookup_sku")),
    ("scheduler", ("cron", "jobs", "retry_policy", "calendar"),
     ("next_run", "enqueue_job", "backoff_delay")),
    ("payments", ("refunds", "gateway", "webhooks", "currency"),
     ("issue_refund", "convert_currency", "handle_webhook")),
)


@dataclass(frozen=True)
class Topic:
    """A kind of bug: how the agent searches for it and how it edits it."""

    name: str
    query: str
    doc_url: str
    original: str
    fixes: tuple[str, str, str]


_TOPICS: tuple[Topic, ...] = (
    Topic("rounding", "decimal rounding half up",
           "https://docs.python.org/3/library/decimal.html",
           "return total",
           ("return round(total, 2)",
            'return total.quantize(Decimal("0.01"))',
            'return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)')),
    Topic("timezone", "aware datetime utc conversion",
           "https://docs.python.org/3/library/datetime.html",
           "now = datetime.now()",
           ("now = datetime.utcnow()",
            "now = datetime.now(timezone.utc)",
            "now = datetime.now(tz=timezone.utc).replace(microsecond=0)")),
    Topic("off_by_one", "range boundary last element",
           "https://docs.python.org/3/library/stdtypes.html",
           "for i in range(1, len(items)):",
           ("for i in range(len(items) - 1):",
            "for i in range(len(items)):",
            "for i, item in enumerate(items):")),
    Topic("none_handling", "optional field default none",
           "https://docs.python.org/3/library/typing.html",
           "if value:",
           ("if value is not None:",
            'if value is not None and value != "":',
            'if value not in (None, ""):')),
    Topic("pagination", "cursor pagination offset limit",
           "https://docs.python.org/3/library/itertools.html",
           "offset = page * size",
           ("offset = (page - 1) * size",
            "offset = max(page - 1, 0) * size",
            "offset = max(page - 1, 0) * min(size, MAX_PAGE_SIZE)")),
    Topic("unicode", "utf-8 encode normalize",
           "https://docs.python.org/3/library/unicodedata.html",
           "data = name.encode()",
           ('data = name.encode("utf-8")',
            'data = unicodedata.normalize("NFC", name).encode("utf-8")',
            'data = unicodedata.normalize("NFKC", name).encode("utf-8")')),
    Topic("retry_backoff", "exponential backoff jitter",
           "https://docs.python.org/3/library/random.html",
           "delay = base * attempt",
           ("delay = base * 2 ** attempt",
            "delay = min(cap, base * 2 ** attempt)",
            "delay = random.uniform(0, min(cap, base * 2 ** attempt))")),
    Topic("caching", "lru_cache invalidation",
           "https://docs.python.org/3/library/functools.html",
           "@lru_cache",
           ("@lru_cache(maxsize=1024)", "@lru_cache(maxsize=None)", "@cache")),
)

DEPENDENCIES: tuple[tuple[str, str], ...] = (
    ("requests", "2.32.3"),
    ("python-dateutil", "2.9.0"),
    ("tenacity", "9.0.0"),
    ("babel", "2.16.0"),
    ("httpx", "0.27.2"),
    ("pydantic", "2.9.2"),
)
REQUIREMENTS = "requirements.txt"
_P_DEPENDENCY = 0.3


@dataclass(frozen=True)
class Task:
    """Attributes of one task, shared by all its runs in both arms."""

    index: int
    task_id: str
    difficulty: float
    area: str
    module: str
    modules: tuple[str, ...]
    symbol: str
    topic: Topic
    n_tests: int
    dependency: tuple[str, str] | None
    prompt_tokens: int
    sizes: dict[str, int] = field(hash=False, compare=False)

    @property
    def target(self) -> str:
        """File that must be fixed."""
        return f"src/{self.area}/{self.module}.py"

    @property
    def test_file(self) -> str:
        """Visible test file."""
        return f"tests/test_{self.module}.py"

    @property
    def neighbours(self) -> tuple[str, ...]:
        """Sibling source files the agent may read while looking around."""
        others = [f"src/{self.area}/{m}.py" for m in self.modules if m != self.module]
        return (*others, f"src/{self.area}/models.py", f"src/{self.area}/__init__.py")

    @property
    def queries(self) -> tuple[str, ...]:
        """Documentation queries the agent may issue."""
        t = self.topic
        return (
            f"{self.module} {t.query}",
            f"{self.symbol} {t.name.replace('_', ' ')}",
            f"{self.area} {t.query}",
            t.query,
        )


def make_task(seed: int, index: int) -> Task:
    """Draw the attributes of task ``index``."""
    d = Draws(task_rng(seed, index))
    area, modules, symbols = d.pick(_AREAS)
    module = d.pick(modules)
    topic = d.pick(_TOPICS)
    difficulty = TASK_DIFFICULTY_SD * d.z()
    dependency = d.pick(DEPENDENCIES) if d.chance(_P_DEPENDENCY) else None
    sizes = {f"src/{area}/{m}.py": int(d.lognormal(4200, 0.5)) for m in modules}
    sizes[f"src/{area}/{module}.py"] = int(d.lognormal(5200, 0.5))
    sizes[f"src/{area}/models.py"] = int(d.lognormal(3000, 0.5))
    sizes[f"src/{area}/__init__.py"] = d.integer(60, 400)
    sizes[f"tests/test_{module}.py"] = int(d.lognormal(3800, 0.5))
    sizes[REQUIREMENTS] = d.integer(300, 700)
    return Task(
        index=index,
        task_id=f"t{index:03d}",
        difficulty=difficulty,
        area=area,
        module=module,
        modules=modules,
        symbol=d.pick(symbols),
        topic=topic,
        n_tests=d.integer(8, 60),
        dependency=dependency,
        prompt_tokens=d.integer(150, 600),
        sizes=sizes,
    )
