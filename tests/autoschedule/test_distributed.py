"""Tuning through a real local cluster of two workers: Dask distributed (`LocalCluster`)
and Ray (`ray.init` with 2 CPUs). Each test skips where its library is not installed;
both carry the `distributed` mark (`-m "not distributed"` leaves them out). The `test`
extra installs both, so `make test` runs them (together 16 s on a 2-core machine, most
of it starting Ray)."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from apps import blur
from halo.autoschedule.measure import MeasureJob, RayExecutor, Sizes
from tests.autoschedule.jobs import blur_outputs, crashing_outputs

pytestmark = pytest.mark.distributed

BUDGET_S = 4.0


def _tune_blur(executor) -> None:
    inp, out, _ = blur.algorithm()
    image = np.random.default_rng(0).random((29, 53), dtype=np.float32)
    result = halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=BUDGET_S,
                               executor=executor)
    assert result.measured_s > 0 and result.measurements >= 1
    np.testing.assert_allclose(out.realize(image.shape, inputs={inp: image}),
                               halo.reference(out, image.shape, inputs={inp: image}),
                               rtol=1e-5)


def _crash_is_an_error(executor) -> None:
    sizes = Sizes.of((9, 11), {"inp": (9, 11)})
    jobs = [MeasureJob(crashing_outputs, "{}", sizes, key="crash"),
            MeasureJob(blur_outputs, "{}", sizes, repeats=1, key="ok")]
    results = {m.key: m for m in executor.measure(jobs)}
    assert results["crash"].error.startswith("crash: the worker died")
    assert results["ok"].error is None and results["ok"].seconds > 0


def test_dask_local_cluster():
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    # Dask workers are daemonic by default, and a daemonic process may not start the
    # child process each job runs in (which keeps a crash from taking the worker down).
    with dask.config.set({"distributed.worker.daemon": False}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        _tune_blur(client)  # a Client is taken as it is (a DaskExecutor of it)


def test_ray_local():
    ray = pytest.importorskip("ray")
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        _crash_is_an_error(RayExecutor())
        _tune_blur(context)  # what ray.init returned is taken as it is
    finally:
        ray.shutdown()
