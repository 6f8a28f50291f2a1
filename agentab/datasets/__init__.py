"""A realistic embedded two-arm example experiment (no files, no network)."""

from agentab.datasets.example import (ARM_PROFILES, BASE_TIME, MAX_STEPS, PRICES_USD_PER_MTOK, TASK_DIFFICULTY_SD,
                                      ArmProfile, example_experiment, example_records, example_specs, write_example)

__all__ = ["ARM_PROFILES", "BASE_TIME", "MAX_STEPS", "PRICES_USD_PER_MTOK", "TASK_DIFFICULTY_SD", "ArmProfile",
           "example_experiment", "example_records", "example_specs", "write_example"]
