"""The Python API: submit a search from Python (a notebook, a script), wait for it, and read
its trials back. From the repository, after ``make venv``:

    .venv/bin/python examples/python_api.py

It searches ``multi_objective.py`` (accuracy up, latency down, within a model-size budget) with
Optuna's multi-objective TPE, 8 trials 2 at a time on the embedded cluster, then prints the
Pareto front and the trials as a pandas DataFrame (``pip install 'disauto[dataframe]'``).
"""

from __future__ import annotations

from pathlib import Path

from disauto import load_job
from disauto import submit


HERE = Path(__file__).resolve().parent


def main() -> None:
    job = submit(
        app_name="pareto-api",
        files=[HERE / "multi_objective.py"],
        app_runner_launch_cmd="python multi_objective.py",
        app_runner_cpus=0.5, app_runner_memory="256M",
        app_core_cpus=0.5, app_core_memory="256M",
        tuning_type="bayesian", bayes_backend="tpe", tuning_setting={"n_startup_trials": 3},
        tuning_parameters={"parameters": [
            {"name": "width", "type": "int", "value": [4, 128], "log": True},
            {"name": "layers", "type": "int", "value": [1, 2]},
            {"name": "learning_rate", "type": "bound", "value": [0.001, 0.1], "log": True},
        ]},
        objective=["accuracy", "latency_ms"], direction=["maximize", "minimize"],
        trail_steps=8, parallelism=2, seed=5,
    )
    print(f"submitted {job.job_id}; its page: {job.page}")
    status = job.wait()  # the job runs in its own process; this only reads its record
    print(f"{status.outcome}: {status.done} trials")
    record = load_job(job.job_id)
    for trial in record.pareto_front:
        print(f"front: trial {trial.number} accuracy={trial.metrics['accuracy']:.3f} "
              f"latency_ms={trial.metrics['latency_ms']:.3f} with {trial.assignment}")
    try:
        frame = record.to_dataframe()
    except ImportError as error:  # pandas is not installed
        print(error)
        return
    print(frame[["number", "state", "metrics_accuracy", "metrics_latency_ms", "feasible",
                 "pareto_front"]].to_string(index=False))


if __name__ == "__main__":
    main()
