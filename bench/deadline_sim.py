"""Deadlines: the no-overhead simulation of a workload where scheduling matters, under every
offer policy (issue 19); :mod:`bench.deadline` runs it (``python -m bench.deadline``) and
:mod:`bench.deadline_real` puts real jobs beside it.

A no-overhead simulation that drives the *real* policy objects (``framework.policies``: their
``plan`` on :class:`~framework._offers.OfferView` offers, the deadline policy's ``observe`` with
the same :func:`~framework._job.progress.job_progress` the scheduler builds, Algorithm 1 of
``appcore.priority`` for the dynamic policies' trial priorities) against a model of the Mesos
master:

* every ``interval`` (1 s) an allocation round offers each agent's free resources to the
  framework with the smallest dominant share (DRF) that waits for something and has no filter
  on that agent; declined resources go to the next framework within the same round (no
  overhead); a decline's filter is ``max(refuse_seconds, interval)``, Mesos' minimum;
* standings travel instantly (the label exchange's up-to-1 s delay is not modelled);
* every job runs an AppCore task (1 CPU) first, then keeps ``parallelism`` trials in flight;
* a trial's duration and outcome are drawn per (seed, job, trial number), so every policy sees
  the same trials; a slow agent multiplies the duration by its slowdown.

Workloads (``--workload``):

``mixed``: 3 fast agents (12 CPUs, 2 GPUs each) and 2 edge agents (12 CPUs, ``class:edge``,
slowdown 2) and 8 jobs arriving over ~10 minutes: budget jobs (a fixed number of trials), random
searches toward a target and Bayesian searches whose chance per trial grows as they learn; CPU
(4 CPUs) and GPU (1 GPU + 2 CPUs) trials of 20-120 s; parallelism 2-6; deadlines for 6 of 8 at
1.2-4x the job's time alone on a fast cluster (the others have none). Reports deadline hit rate,
mean and p95 job time, makespan and CPU utilisation per policy.

``feasible``: the ``mixed`` cluster with 8 budget jobs only (their time alone is known),
deadlines for 6 of 8 at 1.3-2.5x their expected time alone (``alone_seconds``, whole rounds of
the mean trial time). With trial times drawn around that mean only about half are met even
alone (``--policies alone``, the ceiling); what else is missed is lost to contention.

``bayes``: the paper's Table 4 shape with Bayesian jobs -- 3 agents x 12 CPUs, 4 jobs at
parallelism 4 arriving together, trials 4 CPUs, the chance per trial rising from 1 % to 10 %.
Reports mean job time per policy and the ratios to FIFO.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import math
import random
import statistics

from disauto.appcore.priority import ConvergencePriority
from disauto.common.resources import Resources
from disauto.common.trial_state import TrialState
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import OfferView
from disauto.framework.policies import create_policy
from disauto.framework.record import JobConfig
from disauto.framework.record import TaskResources
from disauto.framework.record import TrialRow
from disauto.framework.record import job_progress
from disauto.protos import common_pb2


POLICIES = ("fifo", "dynamic", "dynamic-plus", "deadline")
APPCORE = TaskResources(cpus=1.0, mem_mb=1024.0)
EPOCH = 1_800_000_000.0  # simulated time 0, in wall-clock seconds (deadlines are absolute)


@dataclass(frozen=True)
class Agent:
    name: str
    cpus: float
    mem_mb: float
    gpus: int = 0
    slowdown: float = 1.0

    def attributes(self) -> list[dict[str, object]]:
        if self.slowdown <= 1.0:
            return [{"name": "class", "type": "TEXT", "text": {"value": "fast"}}]
        return [{"name": "class", "type": "TEXT", "text": {"value": "edge"}},
                {"name": "slowdown", "type": "SCALAR", "scalar": {"value": self.slowdown}}]


@dataclass(frozen=True)
class Workload:
    """A job: when it arrives, its trials and how it ends."""

    name: str
    arrival: float
    parallelism: int
    budget: int
    seconds: float
    runner: TaskResources
    kind: str  # "budget": all trials; "random"/"bayes": until a trial succeeds
    p_first: float = 0.0
    p_last: float = 0.0
    learn_trials: float = 1.0
    deadline: float = 0.0  # simulated seconds; 0: none


@dataclass
class SimJob:
    spec: Workload
    policy: OfferPolicy
    config: JobConfig
    priority: ConvergencePriority
    trials: list[TrialRow] = field(default_factory=list)
    appcore_agent: str = ""
    ended: float | None = None
    results: int = 0
    draw: int = 0
    """The job's index in its workload: its trials' draws (the same alone as with others)."""

    def requests(self) -> list[LaunchRequest]:
        if self.ended is not None:
            return []
        if not self.appcore_agent:
            return [LaunchRequest("appcore", APPCORE)]
        running = sum(1 for t in self.trials if t.state == TrialState.RUNNING)
        free = min(self.spec.parallelism - running, self.spec.budget - len(self.trials))
        first = len(self.trials)
        return [LaunchRequest(f"trial-{n:04d}", self.spec.runner, priority=self.priority.priority,
                              trial_number=n) for n in range(first, first + max(0, free))]


def trial_draw(seed: int, job: int, number: int, spec: Workload) -> tuple[float, bool, float]:
    """(duration on a fast agent, success, objective) of one trial: the same for every policy."""
    rng = random.Random(f"{seed}/{job}/{number}")
    duration = spec.seconds * max(0.3, rng.gauss(1.0, 0.25))
    learned = 1.0 - math.exp(-number / spec.learn_trials)
    chance = spec.p_first + (spec.p_last - spec.p_first) * learned
    success = spec.kind != "budget" and rng.random() < chance
    gap = 0.2 * (1.0 - learned) + 0.01
    objective = 0.95 + 0.01 * rng.random() if success else 0.95 - gap * rng.random()
    return duration, success, objective


class Simulation:
    """One cluster, one policy, one seed (see the module docstring)."""

    def __init__(self, agents: Sequence[Agent], jobs: Sequence[Workload], policy: str,
                 seed: int, interval: float = 1.0, draws: Sequence[int] = ()) -> None:
        self.agents = list(agents)
        self.seed = seed
        self.interval = interval
        self.free = {a.name: Resources({"cpus": a.cpus, "mem": a.mem_mb, "gpus": float(a.gpus)})
                     for a in agents}
        self.total = Resources({"cpus": sum(a.cpus for a in agents),
                                "mem": sum(a.mem_mb for a in agents),
                                "gpus": float(sum(a.gpus for a in agents)) or 1.0})
        name, settings = policy_spec(policy)
        self.jobs = [self._job(spec, name, settings) for spec in jobs]
        for index, job in enumerate(self.jobs):
            job.draw = draws[index] if draws else index
        self.filters: dict[tuple[int, str], float] = {}
        self.ends: list[tuple[float, int, int, str, Resources]] = []  # time, job, trial, agent
        self.now = 0.0
        self.busy_cpu_seconds = 0.0

    def _job(self, spec: Workload, policy: str, settings: dict[str, str]) -> SimJob:
        search = common_pb2.JobSpec(max_trials=spec.budget, parallelism=spec.parallelism)
        if spec.kind != "budget":
            search.target = 0.95
        config = JobConfig(job_id=spec.name, app_name=spec.name, launch_cmd="", runner=spec.runner,
                           appcore=APPCORE, search=search,
                           deadline=EPOCH + spec.deadline if spec.deadline else 0.0)
        return SimJob(spec, create_policy(policy, settings, runner=spec.runner), config,
                      ConvergencePriority())

    # -- the master --------------------------------------------------------------------------

    def _share(self, job: SimJob) -> float:
        used = Resources()
        if job.appcore_agent:
            used = used + Resources({"cpus": APPCORE.cpus, "mem": APPCORE.mem_mb})
        for trial in job.trials:
            if trial.state == TrialState.RUNNING:
                used = used + _claim(job.spec.runner)
        return max(used.scalar(n) / self.total.scalar(n) for n in ("cpus", "mem", "gpus"))

    def _round(self) -> bool:
        """One allocation round; whether anything launched."""
        launched = False
        offered: set[tuple[int, str]] = set()
        for _ in range(len(self.jobs) + 1):
            batches: dict[int, list[OfferView]] = {}
            shares = {i: self._share(j) for i, j in enumerate(self.jobs)}
            for agent in self.agents:
                if self.free[agent.name].scalar("cpus") < 0.5:
                    continue
                waiting = [i for i, j in enumerate(self.jobs) if self.now >= j.spec.arrival
                           and j.requests() and (i, agent.name) not in offered
                           and self.filters.get((i, agent.name), 0.0) <= self.now]
                if not waiting:
                    continue
                # As Mesos' allocator: what is offered counts toward the share at once.
                pick = min(waiting, key=lambda i: (shares[i], i))
                shares[pick] += self.free[agent.name].scalar("cpus") / self.total.scalar("cpus")
                offered.add((pick, agent.name))
                batches.setdefault(pick, []).append(OfferView(
                    id=f"{agent.name}@{self.now:.1f}#{pick}", agent_id=agent.name,
                    hostname=agent.name, available=self.free[agent.name],
                    raw={"attributes": agent.attributes()}))
            if not batches:
                break
            for index, offers in batches.items():
                launched |= self._plan(index, offers)
        return launched

    def _plan(self, index: int, offers: list[OfferView]) -> bool:
        job = self.jobs[index]
        requests = job.requests()
        if job.policy.uses_progress:
            job.policy.observe(self._progress(job), [self._standing(j) for j in self.jobs
                                                     if j is not job and j.ended is None
                                                     and self.now >= j.spec.arrival])
        plan = job.policy.plan(offers, requests)
        launched = False
        for offer in offers:
            items = plan.launches.get(offer.id, [])
            for request, claim in items:
                self.free[offer.agent_id] = self.free[offer.agent_id] - claim
                self._start(index, request, offer.agent_id, claim)
                launched = True
            if not items:
                refuse = plan.refuse_seconds.get(offer.id, job.policy.decline_seconds)
                fits = any(_fits(offer.available, r) for r in requests)
                if fits and offer.id not in plan.deliberate:
                    refuse = 0.0
                self.filters[(index, offer.agent_id)] = self.now + max(refuse, self.interval)
        return launched

    def _progress(self, job: SimJob):  # noqa: ANN202 - JobProgress
        waiting = len([r for r in job.requests() if r.trial_number is not None])
        progress = job_progress(job.config, job.trials, EPOCH + self.now,
                                job.policy.agent_slowdown)
        return type(progress)(**{**progress.__dict__, "waiting": waiting})

    def _standing(self, job: SimJob):  # noqa: ANN202 - Standing
        if job.policy.uses_progress:
            job.policy.observe(self._progress(job))
        return job.policy.standing()

    def _start(self, index: int, request: LaunchRequest, agent: str, claim: Resources) -> None:
        job = self.jobs[index]
        if request.trial_number is None:
            job.appcore_agent = agent
            return
        number = request.trial_number
        duration, _, _ = trial_draw(self.seed, job.draw, number, job.spec)
        slowdown = next(a.slowdown for a in self.agents if a.name == agent)
        job.trials.append(TrialRow(number=number, assignment={}, state=TrialState.RUNNING,
                                   agent_id=agent, started_at=EPOCH + self.now,
                                   priority=request.priority))
        self.ends.append((self.now + duration * slowdown, index, number, agent, claim))

    # -- events ------------------------------------------------------------------------------

    def _finish_trials(self) -> None:
        due = sorted(e for e in self.ends if e[0] <= self.now + 1e-9)
        self.ends = [e for e in self.ends if e[0] > self.now + 1e-9]
        for end, index, number, agent, claim in due:
            job = self.jobs[index]
            self.free[agent] = self.free[agent] + claim
            if job.ended is not None:
                continue
            _, success, objective = trial_draw(self.seed, job.draw, number, job.spec)
            row = next(t for t in job.trials if t.number == number)
            row.state, row.ended_at, row.objective = TrialState.COMPLETED, EPOCH + end, objective
            job.priority.tell(objective)
            done = sum(1 for t in job.trials if t.state == TrialState.COMPLETED)
            if success or done >= job.spec.budget:
                self._end_job(index, end)

    def _end_job(self, index: int, end: float) -> None:
        job = self.jobs[index]
        job.ended = end
        for trial in job.trials:
            if trial.state == TrialState.RUNNING:
                trial.state = TrialState.KILLED
        kept = []
        for event in self.ends:
            if event[1] == index:
                self.free[event[3]] = self.free[event[3]] + event[4]
            else:
                kept.append(event)
        self.ends = kept
        if job.appcore_agent:
            self.free[job.appcore_agent] = self.free[job.appcore_agent] + _claim(APPCORE)

    def run(self, limit: float = 100_000.0) -> dict[str, float]:
        while self.now < limit and any(j.ended is None for j in self.jobs):
            self._finish_trials()
            launched = self._round()
            busy = self.total.scalar("cpus") - sum(f.scalar("cpus") for f in self.free.values())
            upcoming = [e[0] for e in self.ends] + [
                j.spec.arrival for j in self.jobs if j.spec.arrival > self.now] + [
                t for t in self.filters.values() if t > self.now]
            step = self.interval if launched else max(
                self.interval, min(upcoming, default=self.now + self.interval) - self.now)
            step = math.ceil(step / self.interval - 1e-9) * self.interval
            self.busy_cpu_seconds += busy * step
            self.now += step
        return self.summary()

    def summary(self) -> dict[str, float]:
        times = [(j.ended or self.now) - j.spec.arrival for j in self.jobs]
        with_deadline = [j for j in self.jobs if j.spec.deadline]
        hits = [j for j in with_deadline
                if j.ended is not None and j.ended <= j.spec.deadline]
        start = min(j.spec.arrival for j in self.jobs)
        makespan = max(j.ended or self.now for j in self.jobs) - start
        return {
            "hit_rate": len(hits) / len(with_deadline) if with_deadline else math.nan,
            "mean": statistics.fmean(times),
            "p95": _percentile(times, 0.95),
            "makespan": makespan,
            "utilisation": self.busy_cpu_seconds / (self.total.scalar("cpus") * self.now),
        }


def _claim(need: TaskResources) -> Resources:
    values = {"cpus": need.cpus, "mem": need.mem_mb}
    if need.gpus:
        values["gpus"] = float(need.gpus)
    return Resources(values)


def _fits(available: Resources, request: LaunchRequest) -> bool:
    return available.contains(_claim(request.resources))


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# -- workloads --------------------------------------------------------------------------------

CPU = TaskResources(cpus=4.0, mem_mb=4096.0)
GPU = TaskResources(cpus=2.0, mem_mb=4096.0, gpus=1)


def mixed_cluster() -> list[Agent]:
    fast = [Agent(f"fast{i}", 12.0, 49152.0, gpus=2) for i in range(3)]
    edge = [Agent(f"edge{i}", 12.0, 49152.0, slowdown=2.0) for i in range(2)]
    return fast + edge


def alone_seconds(spec: Workload) -> float:
    """The job's expected time alone on fast agents at its parallelism (its deadline's base)."""
    if spec.kind == "budget":
        trials = float(spec.budget)
    else:  # the expected trials to the first success: sum over k of P(none of the first k)
        trials, none_yet = 0.0, 1.0
        for number in range(spec.budget):
            trials += none_yet
            learned = 1.0 - math.exp(-number / spec.learn_trials)
            none_yet *= 1.0 - (spec.p_first + (spec.p_last - spec.p_first) * learned)
    return math.ceil(trials / spec.parallelism) * spec.seconds


def mixed_jobs(seed: int) -> list[Workload]:
    rng = random.Random(seed)
    jobs: list[Workload] = []
    for index in range(8):
        kind = ("budget", "random", "bayes", "budget")[index % 4]
        runner = GPU if index % 3 == 1 else CPU
        seconds = rng.choice((20.0, 40.0, 60.0, 120.0))
        parallelism = rng.choice((4, 6, 8))
        spec = Workload(
            name=f"job{index}", arrival=round(rng.uniform(0, 300)), parallelism=parallelism,
            budget=rng.choice((24, 48, 72)) if kind == "budget" else 80, seconds=seconds,
            runner=runner, kind=kind,
            p_first=0.02 if kind == "bayes" else 0.06, p_last=0.25 if kind == "bayes" else 0.06,
            learn_trials=10.0,
        )
        if index % 4 != 3:
            slack = rng.choice((1.2, 1.5, 2.0, 3.0) if kind == "budget" else (2.0, 3.0, 5.0))
            spec = Workload(**{**spec.__dict__,
                               "deadline": spec.arrival + slack * alone_seconds(spec)})
        jobs.append(spec)
    return jobs


def feasible_jobs(seed: int) -> list[Workload]:
    """Budget jobs only (their expected time alone is known), each deadline 1.3-2.5x it: what
    the ``alone`` row misses no policy meets, what else is missed is lost to contention."""
    rng = random.Random(seed)
    jobs: list[Workload] = []
    for index in range(8):
        runner = GPU if index % 3 == 1 else CPU
        spec = Workload(
            name=f"job{index}", arrival=round(rng.uniform(0, 300)),
            parallelism=rng.choice((4, 6, 8)), budget=rng.choice((24, 48, 72)),
            seconds=rng.choice((20.0, 40.0, 60.0, 120.0)), runner=runner, kind="budget")
        if index % 4 != 3:
            slack = rng.choice((1.3, 1.6, 2.0, 2.5))
            spec = Workload(**{**spec.__dict__,
                               "deadline": spec.arrival + slack * alone_seconds(spec)})
        jobs.append(spec)
    return jobs


def bayes_cluster() -> list[Agent]:
    return [Agent(f"agent{i}", 12.0, 20480.0) for i in range(3)]


def bayes_jobs(seed: int) -> list[Workload]:
    del seed
    return [Workload(name=f"bayes{i}", arrival=2.0 * i, parallelism=4, budget=200, seconds=32.0,
                     runner=TaskResources(cpus=4.0, mem_mb=5120.0), kind="bayes",
                     p_first=0.01, p_last=0.10, learn_trials=20.0) for i in range(4)]


WORKLOADS = {"mixed": (mixed_cluster, mixed_jobs), "feasible": (mixed_cluster, feasible_jobs),
             "bayes": (bayes_cluster, bayes_jobs)}


ALONE = "alone"
"""The pseudo-policy of every job alone on the cluster (a ceiling: see :func:`alone_run`)."""


def policy_spec(text: str) -> tuple[str, dict[str, str]]:
    """``NAME[:SETTING=VALUE...]``: a policy's name and settings (``deadline:leftover=gain``;
    a value cannot hold ``:``)."""
    name, *pairs = text.split(":")
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"policy setting {pair!r} in {text!r}: expected NAME=VALUE")
        settings[key.strip()] = value.strip()
    return name.strip(), settings


def alone_run(agents: Sequence[Agent], jobs: Sequence[Workload], seed: int) -> dict[str, float]:
    """Each job alone on the cluster (FIFO, the same trials as with the others).

    A job that misses its deadline alone misses it under any policy (no policy gives it more
    than the whole cluster), so the hit rate here bounds every policy's; the mean is the sum of
    the jobs' own times, what the mean with contention cannot go below.
    """
    times: list[float] = []
    hits: list[bool] = []
    for index, spec in enumerate(jobs):
        sim = Simulation(agents, [spec], "fifo", seed, draws=[index])
        sim.run()
        end = sim.jobs[0].ended if sim.jobs[0].ended is not None else sim.now
        times.append(end - spec.arrival)
        if spec.deadline:
            hits.append(end <= spec.deadline)
    return {"hit_rate": statistics.fmean(hits) if hits else math.nan,
            "mean": statistics.fmean(times), "p95": _percentile(times, 0.95),
            "makespan": math.nan, "utilisation": math.nan}


def run_policy(workload: str, policy: str, seed: int) -> dict[str, float]:
    """One seed of ``workload`` under ``policy`` (``NAME[:SETTING=VALUE...]`` or ``alone``)."""
    cluster, jobs = WORKLOADS[workload]
    if policy == ALONE:
        return alone_run(cluster(), jobs(seed), seed)
    return Simulation(cluster(), jobs(seed), policy, seed).run()


def evaluate(workload: str, policies: Sequence[str], seeds: Sequence[int]
             ) -> dict[str, dict[str, float]]:
    """Each policy's figures, averaged over ``seeds`` (hit rate: over every deadline job)."""
    figures: dict[str, dict[str, float]] = {}
    for policy in policies:
        runs = [run_policy(workload, policy, seed) for seed in seeds]
        figures[policy] = {key: statistics.fmean(r[key] for r in runs if not math.isnan(r[key]))
                           if any(not math.isnan(r[key]) for r in runs) else math.nan
                           for key in runs[0]}
    return figures


def _number(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def markdown(workload: str, figures: dict[str, dict[str, float]]) -> str:
    lines = ["| policy | deadline hit rate | mean job s | p95 job s | makespan s | CPU busy "
             "| hit / fifo | mean / fifo |", "|---|---|---|---|---|---|---|---|"]
    base = figures.get("fifo")
    for policy, f in figures.items():
        ratio_hit = f"{f['hit_rate'] / base['hit_rate']:.2f}" \
            if base and base["hit_rate"] and not math.isnan(f["hit_rate"]) else "-"
        ratio_mean = f"{f['mean'] / base['mean']:.3f}" if base else "-"
        lines.append(f"| {policy} | {_number(f['hit_rate'], 3)} | {f['mean']:.1f} | "
                     f"{f['p95']:.1f} | {_number(f['makespan'], 1)} | "
                     f"{_number(f['utilisation'], 3)} | {ratio_hit} | {ratio_mean} |")
    return f"Workload `{workload}`:\n\n" + "\n".join(lines)
