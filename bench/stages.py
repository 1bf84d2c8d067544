"""Stage DSL overhead: a dataset of N items, one agent run each, with the records tree written.

    python bench/stages.py [N]

Each event (a leaf or a stage ending) updates only its ancestors, so the time per item stays flat as N
grows; the tree is written every 2 seconds and at the end.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from training_pipeline.stages import AgentOutcome, TrainingSession


def main(n: int) -> None:
    path = Path(tempfile.mkdtemp()) / "training_records.json"
    started = time.perf_counter()
    with TrainingSession("bench", records_path=path, dataset=list(range(n))) as root:
        root.iterate_dataset(
            lambda stage, item: stage.run_agent_or_raise(
                item, agent=lambda value: AgentOutcome(value, solved=value % 3 == 0)
            )
        )
    seconds = time.perf_counter() - started
    print(
        f"{n} items ({2 * n} records): {seconds:.2f} s, {seconds / n * 1e6:.0f} µs per item, "
        f"tree {path.stat().st_size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
