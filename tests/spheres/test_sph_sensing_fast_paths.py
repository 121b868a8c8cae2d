"""The compiled and shortcut paths of the SPHERES sensors, estimator and flight software give
exactly (bit for bit) what the plain forms they replace give."""

import random

import numpy as np

from hopsim.actors.spheres.imu import ImuSimulator, _hop_truth
from hopsim.actors.spheres.params import ImuParams

MS = 1_000_000


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=float).view(np.int64)


class _Body:
    """What the IMU reads of a vehicle's dynamics actor: the state and its derivatives at a hop's end."""

    name = "sph"

    def __init__(self):
        self.x = np.zeros(13)
        self.xdot_last = np.zeros(13)


def _end_hop_reference(imu: ImuSimulator, body: _Body, t0_ns: int, t1_ns: int, times: list, rows: list) -> None:
    """The interpreted sampling loop the compiled _hop_samples replaced (appends to times and rows)."""
    truth = _hop_truth(body.x, body.xdot_last, imu.support_N).tolist()
    accel_B, omega_BN_B, omega_dot_B = truth[0:3], truth[3:6], truth[6:9]
    while imu.next_sample_ns <= t1_ns:
        t = imu.next_sample_ns
        imu.next_sample_ns += imu.spacing_ns
        if t <= t0_ns:
            continue
        age_s = (t1_ns - t) / 1_000_000_000
        times.append(t)
        rows.append(
            [
                omega_BN_B[0] - omega_dot_B[0] * age_s,
                omega_BN_B[1] - omega_dot_B[1] * age_s,
                omega_BN_B[2] - omega_dot_B[2] * age_s,
                accel_B[0],
                accel_B[1],
                accel_B[2],
            ]
        )


def test_imu_hop_sampling_matches_the_interpreted_loop():
    rng = random.Random(3)
    nrng = np.random.default_rng(3)
    sampled = 0
    for _ in range(200):
        body = _Body()
        imu = ImuSimulator("imu", body, ImuParams(gravity_mps2=rng.choice([0.0, 9.81])))
        ref = ImuSimulator("imu_ref", body, ImuParams())
        ref.support_N = imu.support_N
        t1 = 0
        times, rows = [], []
        for _ in range(30):
            # hops of any length, some starting after skipped sample instants (a restart)
            t0 = t1 + rng.choice([0, 0, 0, 1, 25 * MS])
            t1 = t0 + rng.choice([1, 1 * MS, 17 * MS, 18 * MS, 19 * MS, 36 * MS, 100 * MS + 3])
            body.x = nrng.normal(size=13)
            body.x[6:10] /= np.linalg.norm(body.x[6:10])
            body.xdot_last = nrng.normal(size=13) * rng.choice([1e-3, 1.0, 1e3])
            imu.end_hop(t0, t1)
            _end_hop_reference(ref, body, t0, t1, times, rows)
            assert imu.next_sample_ns == ref.next_sample_ns
        assert imu.pending_t == times
        if times:
            got = imu.pending_true[: len(times)]
            assert np.array_equal(_bits(got), _bits(np.array(rows)))
            sampled += len(times)
    assert sampled > 1000


def test_estimator_sample_propagation_matches_the_sample_by_sample_coasts():
    """_propagate_samples (flat message samples in, one row per sample out) against the coasts
    of :func:`_coast` taken one interval at a time, with the thrust over each interval."""
    from hopsim.actors.spheres.estimator import _A, _DT, _Q, _R, _V, _W, _coast, _propagate_samples
    from hopsim.actors.spheres.thrust_prediction import impulse_moment_rows

    rng = random.Random(5)
    nrng = np.random.default_rng(5)
    empty = 0
    for _ in range(300):
        n = rng.randint(1, 8)
        t_ns = rng.randint(0, 10) * 18 * MS
        # in time order, some repeated, some before the estimate's time
        times = sorted(rng.randint(0, 14) * 9 * MS + rng.choice([0, 1]) for _ in range(n))
        samples = nrng.normal(size=6 * n) * rng.choice([1e-3, 1.0, 10.0])
        r, v, bias = nrng.normal(size=3), nrng.normal(size=3), nrng.normal(size=3) * 1e-2
        q = nrng.normal(size=4)
        q /= np.linalg.norm(q)
        k_spans = rng.randint(0, 4)
        spans = np.column_stack(
            [nrng.uniform(0.0, 0.15, k_spans), nrng.uniform(0.0, 0.15, k_spans), nrng.normal(size=(k_spans, 3))]
        )
        spans[:, :2].sort(axis=1)
        mass = rng.uniform(3.0, 5.0)
        use_accel, planar = rng.random() < 0.3, rng.random() < 0.5
        got = _propagate_samples(
            r, v, q, bias, t_ns, np.array(times, dtype=np.int64), samples, spans, mass, use_accel, planar
        )
        omega_B = samples[: 3 * n].reshape(-1, 3)
        accel_B = samples[3 * n :].reshape(-1, 3)
        t_prev = t_ns
        for k, t in enumerate(times):
            if k > 0:
                t_prev = max(times[k - 1], t_ns)
            t_end = max(t, t_prev)
            dt = (t_end - t_prev) / 1_000_000_000
            omega = omega_B[k] - bias
            if dt > 0.0:
                impulse, moment = impulse_moment_rows(
                    np.array([t_prev / 1_000_000_000]), np.array([t_end / 1_000_000_000]), spans
                )
                r, v, q = _coast(r, v, q, omega, impulse[0], moment[0], accel_B[k], mass, dt, use_accel, planar)
            else:
                empty += 1
            row = got[k]
            for col, want in ((_R, r), (_V, v), (_Q, q), (_W, omega), (_A, accel_B[k])):
                assert np.array_equal(_bits(row[col]), _bits(want))
            assert _bits(row[_DT]) == _bits(dt)
    assert empty > 50


def test_estimator_coast_state_is_the_coast_in_one_array():
    from hopsim.actors.spheres.estimator import _Q, _R, _V, _coast, _coast_state

    nrng = np.random.default_rng(7)
    for k in range(200):
        r, v, w, impulse, moment, accel = (nrng.normal(size=3) for _ in range(6))
        q = nrng.normal(size=4)
        q /= np.linalg.norm(q)
        args = (r, v, q, w, impulse, moment, accel, 4.3, float(nrng.uniform(0.0, 0.2)), k % 3 == 0, k % 2 == 0)
        got = _coast_state(*args)
        for col, want in zip((_R, _V, _Q), _coast(*args)):
            assert np.array_equal(_bits(got[col]), _bits(want))


def test_pose_residuals_match_the_plain_loop():
    """_residuals against the same loop written out plainly, its products by
    :func:`hopsim.dynamics.detlinalg.matmul` (bit for bit), and within rounding of numpy's ``@``."""
    from numba import njit

    from hopsim.actors.spheres.pose_solver import _residuals
    from hopsim.dynamics import detlinalg
    from hopsim.dynamics.spatial import quat_to_dcm

    @njit(cache=False)
    def residuals_allocating(p_b, s_B, rho, dr, dR, r, q, J, res, numpy_products):
        R = quat_to_dcm(q)
        n = rho.size
        for k in range(n):
            m = R @ s_B[k] if numpy_products else detlinalg.matmul(R, s_B[k])
            moved = dR[k] @ m if numpy_products else detlinalg.matmul(dR[k], m)
            d0 = p_b[k, 0] - (r[0] + dr[k, 0] + moved[0])
            d1 = p_b[k, 1] - (r[1] + dr[k, 1] + moved[1])
            d2 = p_b[k, 2] - (r[2] + dr[k, 2] + moved[2])
            pred = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            res[k] = rho[k] - pred
            if J.shape[0] == n:
                u = np.array([d0 / pred, d1 / pred, d2 / pred])
                a = dR[k].T @ u if numpy_products else detlinalg.matmul(dR[k].T, u)
                J[k, 0] = -u[0]
                J[k, 1] = -u[1]
                J[k, 2] = -u[2]
                J[k, 3] = a[1] * m[2] - a[2] * m[1]
                J[k, 4] = a[2] * m[0] - a[0] * m[2]
                J[k, 5] = a[0] * m[1] - a[1] * m[0]

    nrng = np.random.default_rng(11)
    for _ in range(300):
        n = int(nrng.integers(1, 60))
        p_b, s_B, dr = nrng.normal(size=(n, 3)) * 2.0, nrng.normal(size=(n, 3)) * 0.1, nrng.normal(size=(n, 3)) * 1e-2
        dR = np.array([quat_to_dcm(q / np.linalg.norm(q)) for q in nrng.normal(size=(n, 4))])
        rho, r = nrng.uniform(0.5, 3.0, n), nrng.normal(size=3)
        q = nrng.normal(size=4)
        q /= np.linalg.norm(q)
        for rows in (n, 0):
            J, J_ref = np.zeros((rows, 6)), np.zeros((rows, 6))
            res, res_ref = np.empty(n), np.empty(n)
            _residuals(p_b, s_B, rho, dr, dR, r, q, J, res)
            residuals_allocating(p_b, s_B, rho, dr, dR, r, q, J_ref, res_ref, False)
            assert np.array_equal(_bits(res), _bits(res_ref))
            assert np.array_equal(_bits(J), _bits(J_ref))
            # numpy's BLAS products (which depend on the CPU) agree to within their rounding
            J_np, res_np = np.zeros((rows, 6)), np.empty(n)
            residuals_allocating(p_b, s_B, rho, dr, dR, r, q, J_np, res_np, True)
            np.testing.assert_allclose(res, res_np, rtol=0, atol=1e-13)
            np.testing.assert_allclose(J, J_np, rtol=0, atol=1e-13)


def test_an_imu_batch_parsed_from_its_bytes_is_the_message_its_fields_give():
    """imu_samples builds the ImuSamples the IMU publishes from the samples' bytes: the message,
    and its serialized bytes, are those of the constructor given the same values as lists, for
    batches of 0 to 40 samples (lengths past one varint byte) and for -0.0, infinities, NaN and
    subnormals."""
    from hopsim.actors.messages import imu_samples
    from hopsim.schemas.spheres_pb2 import ImuSamples

    rng = np.random.default_rng(7)
    specials = [-0.0, 0.0, np.inf, -np.inf, np.nan, 5e-324, -1e308]
    for n in [0, 1, 2, 5, 6, 16, 40]:
        y = rng.standard_normal((n, 6)) * 10.0 ** rng.integers(-9, 9, (n, 6))
        if n:
            y.flat[rng.integers(0, y.size, min(y.size, 7))] = specials[: min(y.size, 7)]
        times = [int(t) for t in rng.integers(0, 10**12, n)]
        built = imu_samples("sph2", times, y[:, :3], y[:, 3:])
        plain = ImuSamples(
            vehicle="sph2", t_ns=times, omega_B=y[:, :3].ravel().tolist(), accel_B=y[:, 3:].ravel().tolist()
        )
        assert built.SerializeToString(deterministic=True) == plain.SerializeToString(deterministic=True)
        assert built.vehicle == "sph2" and list(built.t_ns) == times
        assert _bits(built.omega_B[:]).tolist() == _bits(y[:, :3].ravel()).tolist()
        assert _bits(built.accel_B[:]).tolist() == _bits(y[:, 3:].ravel()).tolist()


def test_gm_ranges_built_from_and_read_as_bytes_are_the_messages_and_arrays_of_the_lists():
    """gm_ranges builds the GmRanges the metrology simulator publishes from the ranges' bytes, and
    gm_range_values reads them back from the message's wire format: the message and its bytes are
    the constructor's given the same values as a list, and the values read back are the list path's
    (-0.0, infinities, NaN and subnormals included, a cycle starting at 0, shapes whose bytes need
    one and two length bytes); a message whose ranges do not end its bytes is read element by element."""
    from hopsim.actors.messages import gm_range_values, gm_ranges
    from hopsim.schemas.spheres_pb2 import GmRanges

    rng = np.random.default_rng(11)
    specials = [-0.0, 0.0, np.inf, -np.inf, np.nan, 5e-324, -1e308, -1.0]
    for shape in [(1, 1, 1), (1, 1, 15), (8, 6, 4), (3, 2, 5)]:
        for _ in range(20):
            r = rng.standard_normal(shape) * 10.0 ** rng.integers(-9, 9, shape)
            r.flat[rng.integers(0, r.size, min(r.size, 8))] = specials[: min(r.size, 8)]
            start = int(rng.choice([0, 153_000_000, 10**13]))
            fire = [start + int(k) for k in rng.integers(0, 10**9, shape[0])]
            built = gm_ranges("sph1", start, fire, r)
            plain = GmRanges(
                vehicle="sph1",
                cycle_start_ns=start,
                beacon_fire_ns=fire,
                n_beacons=shape[0],
                n_faces=shape[1],
                n_receivers=shape[2],
                range_m=r.ravel().tolist(),
            )
            assert built == plain
            assert built.SerializeToString(deterministic=True) == plain.SerializeToString(deterministic=True)
            for msg in (built, plain):
                got = gm_range_values(msg)
                ref = np.array(msg.range_m[:], dtype=float)
                assert got.dtype == ref.dtype and got.flags.writeable and got.flags.c_contiguous
                assert np.array_equal(_bits(got), _bits(ref))
    # not the last bytes of the message (an unknown field after them): the list path
    msg = GmRanges(range_m=[1.0, -1.0, 2.5])
    odd = GmRanges.FromString(msg.SerializeToString() + bytes((9 << 3 | 0, 5)))
    assert np.array_equal(gm_range_values(odd), [1.0, -1.0, 2.5])
    assert gm_range_values(GmRanges()).shape == (0,)
