"""Modal flexible bodies (``hopsim.dynamics.flexible``, ``hopsim.dynamics.flexible_beam``): the
beam's modes against the Euler-Bernoulli cantilever, a tip-loaded transient against the full
finite-element model, the tip sensor against the static deflection, a spinning hub's momentum
and energy, a spring-hinged panel against Basilisk's hingedRigidBodyStateEffector, the attitude
loop of a hub with a boom against the hub + beam finite-element model, and the NPZ mode files."""

import json
import subprocess

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import eigh, expm
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation

from hopsim.dynamics.flexible import (
    FlexibleSpacecraft,
    ModalAppendage,
    generalized_forces,
    load_modes,
    rigid_hinged_panel,
    rk4_step,
    save_modes,
)
from hopsim.dynamics.flexible_beam import RX, RY, RZ, UX, UY, UZ, beam, cantilever_modes, clamped_modes

# an aluminium tube: 2 m, E I = 700 N m^2 in y, rho A = 0.54 kg/m (first mode 31.6 rad/s)
E, RHO, AREA, IY, LENGTH = 70e9, 2700.0, 2e-4, 1e-8, 2.0
IZ = 2e-8
SHEAR, TORSION = 26e9, 2e-8


def cantilever_roots(n):
    """The first ``n`` roots of ``1 + cos(x) cosh(x) = 0`` (as ``cos x + 1/cosh x``), one in each
    interval ``[(k - 1) pi, k pi]``."""
    return np.array(
        [
            brentq(lambda x: np.cos(x) + 1.0 / np.cosh(x), (k - 1) * np.pi, k * np.pi, xtol=1e-14)
            for k in range(1, n + 1)
        ]
    )


def report(test, **numbers):
    """One line of measured numbers (shown by ``pytest -s``)."""
    print(f"\n{test}: " + ", ".join(f"{k} {v:.3g}" for k, v in numbers.items()))


def heavy_hub(appendage, R_BA=None, r=(0.0, 0.0, 0.0)) -> FlexibleSpacecraft:
    """The appendage on a hub of 1e9 kg and 1e9 kg m^2: its root held still."""
    sc = FlexibleSpacecraft(1e9, np.zeros(3), 1e9 * np.eye(3))
    sc.attach("beam", appendage, R_BA, r)
    return sc


# --------------------------------------------------------------------------- the beam's modes


def test_cantilever_frequencies_match_euler_bernoulli():
    """40 Hermite elements: the first six bending frequencies in each plane within 1e-4 of
    ``(b_k L)^2 sqrt(E I / (rho A L^4))`` (the roots found here by brentq). The axial and torsion
    frequencies ``(2k - 1) pi / (2 L) sqrt(E / rho)`` and ``(2k - 1) pi / (2 L) sqrt(G J / (rho
    Ip))`` (linear elements, which converge as h^2): the first of each within 1e-4, the next two
    within 2e-3."""
    bL = cantilever_roots(6)
    bm = beam(LENGTH, 40, E=E, rho=RHO, A=AREA, Iy=IY, Iz=IZ, bending="yz")
    app = cantilever_modes(bm, 16)
    tip = app.node("tip")
    in_y = np.abs(app.node_translations[tip, 1]) > np.abs(app.node_translations[tip, 2])
    for I, plane in ((IZ, in_y), (IY, ~in_y)):
        exact = bL**2 * np.sqrt(E * I / (RHO * AREA * LENGTH**4))
        rel = np.abs(app.frequency[plane][:6] - exact) / exact
        report("bending", EI=E * I, worst_relative_error=rel.max())
        assert rel.max() <= 1e-4, rel
    bar = beam(
        LENGTH, 40, E=E, rho=RHO, A=AREA, Iy=IY, G=SHEAR, J=TORSION, Ip=3e-8, bending="", axial=True, torsion=True
    )
    app = cantilever_modes(bar, 4)
    k = np.arange(1.0, 5.0)
    axial = (2 * k - 1) * np.pi / (2 * LENGTH) * np.sqrt(E / RHO)
    twist = (2 * k - 1) * np.pi / (2 * LENGTH) * np.sqrt(SHEAR * TORSION / (RHO * 3e-8))
    exact = np.sort(np.concatenate([axial, twist]))[:4]
    rel = np.abs(app.frequency / exact - 1)
    report("axial and torsion", first=rel[0:2].max(), worst=rel.max())
    assert rel[0:2].max() <= 1e-4 and rel.max() <= 2e-3, rel  # twist 1, axial 1, twist 2, twist 3


def test_participation_equals_the_mass_matrix_on_rigid_motions():
    """The modes (Cholesky and Jacobi, the same bits on every CPU) are LAPACK's (``eigh``) to
    1e-8; ``P`` and ``H`` (Gauss quadrature of the mode fields) equal the consistent mass matrix
    between the modes and the rigid translations and rotations of the whole beam; the modes
    have unit modal mass; the nodal matrices are the mode shapes' rows; ``J1``, and ``J2`` and
    ``G`` where the fields' products are bending with bending, equal the mass matrix's
    products of the fields."""
    bm = beam(LENGTH, 8, E=E, rho=RHO, A=AREA, Iy=IY, Iz=IZ, G=SHEAR, J=TORSION, bending="yz", axial=True, torsion=True)
    app = cantilever_modes(bm, 10)
    w2, V = clamped_modes(bm, 10)
    w2_lapack, V_lapack = eigh(bm.K, bm.M, subset_by_index=[0, 9])
    V_lapack *= np.sign(V_lapack[np.argmax(np.abs(V_lapack), axis=0), np.arange(10)])  # the largest entry positive
    assert np.abs(w2 / w2_lapack - 1).max() <= 1e-8
    assert np.abs(V - V_lapack).max() <= 1e-9 * np.abs(V).max()
    full = np.zeros((bm.M_full.shape[0], 10))
    full[bm.free] = V
    x = bm.x_nodes
    rigid = np.zeros((bm.M_full.shape[0], 6))  # translations x, y, z, rotations x, y, z about the root
    for node in range(len(x)):
        for c, col in ((UX, 0), (UY, 1), (UZ, 2), (RX, 3), (RY, 4), (RZ, 5)):
            if bm.dofs[node, c] >= 0:
                rigid[bm.dofs[node, c], col] = 1.0
        rigid[bm.dofs[node, UZ], 4] = -x[node]  # rotation about y: uz = -x ry
        rigid[bm.dofs[node, UY], 5] = x[node]  # rotation about z: uy = x rz
    coupling = rigid.T @ bm.M_full @ full
    assert np.abs(coupling[0:3] - app.P).max() <= 1e-12 * np.abs(app.P).max()
    assert np.abs(coupling[3:6] - app.H).max() <= 1e-12 * np.abs(app.H).max()
    assert np.abs(full.T @ bm.M_full @ full - np.eye(10)).max() <= 1e-12
    assert np.array_equal(app.frequency, np.sqrt(w2))
    tip = app.node("tip")
    for c in range(3):
        assert np.array_equal(app.node_translations[tip, c], full[bm.dofs[-1, c]])
        assert np.array_equal(app.node_rotations[tip, c], full[bm.dofs[-1, 3 + c]])
    rigid_mass = rigid.T @ bm.M_full @ rigid
    assert abs(rigid_mass[0, 0] - app.mass) <= 1e-12 * app.mass
    assert np.abs(rigid_mass[3:6, 3:6] - app.inertia).max() <= 1e-12 * np.abs(app.inertia).max()
    # the second-order invariants, where the mass matrix gives them: each field as a y-plane field
    fields = np.zeros((3, bm.M_full.shape[0], 10))  # x (axial), y, z (as uy, rz = uz, -ry)
    fields[0][bm.dofs[:, UX]] = full[bm.dofs[:, UX]]
    fields[1][bm.dofs[:, UY]], fields[1][bm.dofs[:, RZ]] = full[bm.dofs[:, UY]], full[bm.dofs[:, RZ]]
    fields[2][bm.dofs[:, UY]], fields[2][bm.dofs[:, RZ]] = full[bm.dofs[:, UZ]], -full[bm.dofs[:, RY]]
    inner = np.einsum("ari,rs,bsj->ijab", fields, bm.M_full, fields)  # integral Phi_ia Phi_jb dm
    J2 = app.J2
    for a, b, c in ((0, 1, 2), (1, 0, 2), (2, 0, 1)):
        assert np.allclose(J2[:, :, a, a], inner[:, :, b, b] + inner[:, :, c, c], rtol=0, atol=1e-12)
    assert np.allclose(J2[:, :, 1, 2], -0.5 * (inner[:, :, 1, 2] + inner[:, :, 2, 1]), rtol=0, atol=1e-12)
    assert np.allclose(app.G[:, 0, :], inner[:, :, 1, 2] - inner[:, :, 2, 1], rtol=0, atol=1e-12)
    stretch = np.zeros(bm.M_full.shape[0])  # ux = x, and as a y-plane field uy = x, rz = 1
    stretch[bm.dofs[:, UX]] = stretch[bm.dofs[:, UY]] = x
    stretch[bm.dofs[:, RZ]] = 1.0
    s = np.einsum("r,rs,asi->ia", stretch, bm.M_full, fields)  # integral x Phi_i dm
    ex = np.eye(3)[0]
    J1 = 2 * s[:, 0, None, None] * np.eye(3) - np.einsum("a,ib->iab", ex, s) - np.einsum("ia,b->iab", s, ex)
    assert np.allclose(app.J1, J1, rtol=0, atol=1e-12 * np.abs(J1).max())


# --------------------------------------------------------------------------- transient and sensor


def test_tip_load_transient_against_the_full_finite_element_model():
    """A 1 N step load at the tip of a 6-element beam (12 degrees of freedom), modal damping 2 %,
    0.4 s: the tip's deflection from the modal body on a held hub (RK4) against scipy's DOP853 on
    the full ``M qdd + C qd + K q = f`` (``C = M V diag(2 zeta w) V^T M``, all modes). 4 of 12
    modes: within 1e-3 of the peak (the truncated modes' share); all 12: within 1e-6."""
    ne, zeta, force, T = 6, 0.02, 1.0, 0.4
    bm = beam(LENGTH, ne, E=E, rho=RHO, A=AREA, Iy=IY, bending="y")
    M, K = bm.M, bm.K
    w2, V = eigh(K, M)
    C = M @ V @ np.diag(2 * zeta * np.sqrt(w2)) @ V.T @ M
    tip = bm.dof(ne, UY)
    f = np.zeros(M.shape[0])
    f[tip] = force
    n = M.shape[0]
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ K, -Minv @ C]])
    b = np.concatenate([np.zeros(n), Minv @ f])
    times = np.linspace(0.0, T, 401)
    ref = solve_ivp(lambda t, y: A @ y + b, (0.0, T), np.zeros(2 * n), "DOP853", times, rtol=1e-10, atol=1e-13)
    reference = ref.y[tip]
    for n_modes, h, bound in ((4, 1e-4, 1e-3), (12, 2e-5, 1e-6)):
        sc = heavy_hub(cantilever_modes(bm, n_modes, damping=zeta))
        node_forces = np.zeros((2, 3))
        node_forces[sc.node_index("beam", "tip")] = (0.0, force, 0.0)
        xs = sc.rk4(sc.pack_state(), h, round(T / h), sc.loads(node_forces_B=node_forces))
        ours = np.array([sc.node_displacement(x, "beam", "tip")[0][1] for x in xs[:: round(1e-3 / h)]])
        err = np.abs(ours - reference).max() / np.abs(reference).max()
        report("transient", modes=n_modes, tip_error_over_peak=err)
        assert err <= bound, (n_modes, err)


def test_tip_sensor_reads_the_static_deflection():
    """The tip node of a beam attached at an angle: with every mode, the nodal matrices' static
    sum ``sum_k phi_k phi_k^T f / w_k^2`` is the cantilever's ``F L^3 / (3 E I)`` and
    ``F L^2 / (2 E I)`` in both planes (1e-10), rotated into B; a tip load on the heavily damped
    modal body settles there (1e-8)."""
    bm = beam(LENGTH, 4, E=E, rho=RHO, A=AREA, Iy=IY, Iz=IZ, bending="yz")
    app = cantilever_modes(bm, 16, damping=0.9)
    R_BA = Rotation.from_euler("zyx", [0.3, -0.2, 0.5]).as_matrix()
    sc = heavy_hub(app, R_BA, (0.4, -0.1, 0.2))
    k = sc.node_index("beam", "tip")
    a = sc.arrays
    F_A = np.array([0.0, 1.5, -0.8])  # along y and z of the beam
    flex = np.einsum("an,n,bn->ab", a.node_T[k], 1.0 / a.omega**2, a.node_T[k])
    u_B = flex @ (R_BA @ F_A)
    u_A = R_BA.T @ u_B
    expected = np.array([0.0, F_A[1] * LENGTH**3 / (3 * E * IZ), F_A[2] * LENGTH**3 / (3 * E * IY)])
    report("static tip", error=np.abs(u_A - expected).max() / np.abs(expected).max())
    assert np.abs(u_A - expected).max() <= 1e-10 * np.abs(expected).max()
    rot_A = R_BA.T @ np.einsum("an,n,bn->ab", a.node_R[k], 1.0 / a.omega**2, a.node_T[k]) @ (R_BA @ F_A)
    expected_rot = np.array([0.0, -F_A[2] * LENGTH**2 / (2 * E * IY), F_A[1] * LENGTH**2 / (2 * E * IZ)])
    assert np.abs(rot_A - expected_rot).max() <= 1e-10 * np.abs(expected_rot).max()
    node_forces = np.zeros((2, 3))
    node_forces[k] = R_BA @ F_A
    x = sc.rk4(sc.pack_state(), 1e-4, 8000, sc.loads(node_forces_B=node_forces))[-1]
    u, rot = sc.node_displacement(x, "beam", "tip")
    report("settled tip sensor", error=np.abs(R_BA.T @ u - expected).max() / np.abs(expected).max())
    assert np.abs(R_BA.T @ u - expected).max() <= 1e-8 * np.abs(expected).max()
    assert np.abs(R_BA.T @ rot - expected_rot).max() <= 1e-8 * np.abs(expected_rot).max()
    R_NB = Rotation.from_quat(x[3:7]).as_matrix()
    tip_N = x[0:3] + R_NB @ ((0.4, -0.1, 0.2) + R_BA @ (LENGTH, 0.0, 0.0) + u)
    assert np.abs(sc.node_position_N(x, "beam", "tip") - tip_N).max() <= 1e-15 * np.abs(tip_N).max()


# --------------------------------------------------------------------------- a spinning hub


def spinning_vehicle():
    """A hub with two booms at angles (4 and 3 modes: bending in both planes, torsion and axial
    stiffness modeled), spinning about a skew axis, modes excited, drifting."""
    boom1 = beam(5.0, 8, E=70e9, rho=2700.0, A=1e-4, Iy=2e-9, Iz=3e-9, G=26e9, J=4e-9, bending="yz", torsion=True)
    boom2 = beam(3.0, 6, E=70e9, rho=2700.0, A=1e-4, Iy=2e-9, bending="yz", axial=True)
    sc = FlexibleSpacecraft(200.0, [0.02, -0.01, 0.03], [[60.0, 2.0, -1.0], [2.0, 50.0, 1.5], [-1.0, 1.5, 70.0]])
    sc.attach("boom1", cantilever_modes(boom1, 4), Rotation.from_euler("z", 0.1).as_matrix(), [0.6, 0.0, 0.0])
    sc.attach(
        "boom2", cantilever_modes(boom2, 3), Rotation.from_euler("zx", [-np.pi / 2, 0.3]).as_matrix(), [0, -0.5, 0.1]
    )
    rng = np.random.default_rng(3)
    x = sc.pack_state(
        r_BN_N=[1.0, 2.0, -0.5],
        q_BN=[0.1, -0.2, 0.3, 0.9],
        eta=0.02 * rng.normal(size=7),
        v_BN_B=[0.05, -0.02, 0.01],
        omega_BN_B=[0.05, 0.1, 0.6],
        etadot=0.05 * rng.normal(size=7),
    )
    return sc, x


def test_spinning_hub_conserves_momentum_and_energy():
    """No damping, no load, 10 s of RK4 (modes from 3.2 to 56 rad/s, spin 0.6 rad/s): at
    h = 0.5 ms the angular momentum about N's origin within 1e-10 relative, the linear momentum
    within 1e-11 and the energy within 1e-7. What drifts is RK4's truncation (the energy: its
    dissipation of the fastest modes): from h = 1 ms it falls by over 16 (h^5)."""
    sc, x = spinning_vehicle()
    drift = {}
    for h in (1e-3, 5e-4):
        xs = sc.rk4(x, h, round(10.0 / h))[:: round(0.1 / h)]
        p0, H0 = sc.momentum(xs[0])
        E0 = sc.energy(xs[0])
        dH = max(np.linalg.norm(sc.momentum(s)[1] - H0) for s in xs) / np.linalg.norm(H0)
        dp = max(np.linalg.norm(sc.momentum(s)[0] - p0) for s in xs) / np.linalg.norm(p0)
        drift[h] = (dH, dp, max(abs(sc.energy(s) - E0) for s in xs) / E0)
        report(f"spinning hub, h = {h * 1e3:g} ms", angular=drift[h][0], linear=drift[h][1], energy=drift[h][2])
    dH, dp, dE = drift[5e-4]
    assert dH <= 1e-10, dH
    assert dp <= 1e-11, dp
    assert dE <= 1e-7, dE
    assert drift[1e-3][0] >= 16 * dH and drift[1e-3][2] >= 16 * dE, drift


def test_a_step_is_classical_rk4_on_the_state_derivative():
    """``rk4_step`` is RK4 on ``state_derivative`` (then the quaternion normalized), bit for bit,
    and the derivative's accelerations solve ``M(eta) Udot = F``."""
    sc, x = spinning_vehicle()
    node_forces = np.zeros((sc.n_nodes, 3))
    node_forces[sc.node_index("boom1", "tip")] = (0.3, -0.2, 0.5)
    loads = sc.loads(force_B=(1.0, 2.0, -1.0), torque_B=(0.1, 0.0, -0.2), node_forces_B=node_forces)
    h = 1e-3
    k1 = sc.derivative(x, loads)
    k2 = sc.derivative(x + 0.5 * h * k1, loads)
    k3 = sc.derivative(x + 0.5 * h * k2, loads)
    k4 = sc.derivative(x + h * k3, loads)
    y = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    y[3:7] /= np.sqrt(y[3] * y[3] + y[4] * y[4] + y[5] * y[5] + y[6] * y[6])
    assert np.array_equal(rk4_step(x, h, sc.packed, loads), y)
    n = sc.n_modes
    eta, u = x[7 : 7 + n], x[7 + n :]
    M = sc.mass_matrix(eta)
    F = generalized_forces(sc.packed, M, eta, u, loads)
    assert np.abs(M @ k1[7 + n :] - F).max() <= 1e-12 * np.abs(F).max()


# --------------------------------------------------------------------------- against Basilisk

BSK_SCRIPT = r"""
import json, sys
import numpy as np
from Basilisk.simulation import spacecraft, hingedRigidBodyStateEffector
from Basilisk.utilities import SimulationBaseClass, macros
job = json.load(sys.stdin)
out = []
for theta0, omega0 in job["cases"]:
    sim = SimulationBaseClass.SimBaseClass()
    sim.CreateNewProcess("p").addTask(sim.CreateNewTask("t", macros.sec2nano(job["h"])))
    sc = spacecraft.Spacecraft()
    sc.hub.mHub = job["hub_mass"]
    sc.hub.r_BcB_B = [[0.0], [0.0], [0.0]]
    sc.hub.IHubPntBc_B = job["hub_inertia"]
    sc.hub.r_CN_NInit = [[0.0], [0.0], [0.0]]
    sc.hub.v_CN_NInit = [[0.0], [0.0], [0.0]]
    sc.hub.sigma_BNInit = [[0.0], [0.0], [0.0]]
    sc.hub.omega_BN_BInit = [[w] for w in omega0]
    panel = hingedRigidBodyStateEffector.HingedRigidBodyStateEffector()
    panel.mass, panel.IPntS_S, panel.d = job["mass"], job["IPntS_S"], job["d"]
    panel.k, panel.c = job["k"], job["c"]
    panel.r_HB_B = [[r] for r in job["r_HB_B"]]
    panel.dcm_HB = job["dcm_HB"]
    panel.thetaInit, panel.thetaDotInit = theta0, 0.0
    sc.addStateEffector(panel)
    states, angles = sc.scStateOutMsg.recorder(), panel.hingedRigidBodyOutMsg.recorder()
    for model in (sc, panel, states, angles):
        sim.AddModelToTask("t", model)
    sim.InitializeSimulation()
    sim.ConfigureStopTime(macros.sec2nano(job["t_end"]))
    sim.ExecuteSimulation()
    out.append({"omega": np.asarray(states.omega_BN_B).tolist(), "theta": np.asarray(angles.theta).ravel().tolist()})
json.dump(out, sys.stdout)
"""


def test_spring_hinged_panel_against_basilisk():
    """A 40 kg panel on a torsional spring (k = 60 N m/rad, c = 3 N m s/rad) hinged 1.2 m from
    the centre of mass of a 500 kg hub with a full inertia tensor, the hinge line and the panel
    skew to the hub's axes, released from rest at theta0: hopsim's one-mode appendage
    (:func:`rigid_hinged_panel`, ``theta = eta / sqrt(I_yy + m d^2)``) against Basilisk's
    hingedRigidBodyStateEffector, RK4 at Basilisk's 10 ms, 20 s. The hub rate and the panel
    angle agree within 1e-6 of their peaks at theta0 = 1 mrad; the difference is the panel's
    small-angle (linear) displacement field: it grows as theta0^2. A hub spinning at 1 mrad/s
    adds the centrifugal stiffening that the linear field leaves out, (omega0 / w)^2 = 1.8e-6
    of the panel's own frequency squared: the angle then agrees within 1e-5."""
    from basilisk_peer import bsk_python

    python = bsk_python()
    h1 = np.array([0.6, -0.48, 0.64])
    h1 /= np.linalg.norm(h1)
    h2 = np.cross(h1, [0.2, 0.9, 0.1])
    h2 /= np.linalg.norm(h2)
    dcm_HB = np.array([h1, h2, np.cross(h1, h2)])  # rows: the hinge frame's axes in B
    r_HB_B = -1.2 * h1  # the panel (its centre of mass at -d h1 from the hinge) points outward
    job = {
        "h": 0.01,
        "t_end": 20.0,
        "cases": [(1e-3, [0.0, 0.0, 0.0]), (3e-3, [0.0, 0.0, 0.0]), (1e-3, [3e-4, -5e-4, 8e-4])],
        "hub_mass": 500.0,
        "hub_inertia": [[400.0, 20.0, -10.0], [20.0, 300.0, 15.0], [-10.0, 15.0, 350.0]],
        "mass": 40.0,
        "IPntS_S": [[30.0, 0.0, 0.0], [0.0, 20.0, 0.0], [0.0, 0.0, 12.0]],
        "d": 1.5,
        "k": 60.0,
        "c": 3.0,
        "r_HB_B": r_HB_B.tolist(),
        "dcm_HB": dcm_HB.tolist(),
    }
    reply = subprocess.run(
        [python, "-c", BSK_SCRIPT], input=json.dumps(job), capture_output=True, text=True, check=True, timeout=300
    )
    theirs = json.loads(reply.stdout)
    mu = job["IPntS_S"][1][1] + job["mass"] * job["d"] ** 2  # inertia about the hinge line
    panel = rigid_hinged_panel(
        job["mass"], np.array(job["IPntS_S"]), [-job["d"], 0.0, 0.0], [0, 1, 0], job["k"], job["c"]
    )
    sc = FlexibleSpacecraft(job["hub_mass"], np.zeros(3), np.array(job["hub_inertia"]))
    sc.attach("panel", panel, dcm_HB.T, r_HB_B)
    errors = []
    for (theta0, omega0), bsk in zip(job["cases"], theirs, strict=True):
        eta0 = [np.sqrt(mu) * theta0]
        M0 = sc.mass_matrix(eta0)
        S = np.array([M0[5, 1], M0[3, 2], M0[4, 0]])  # the first moment, from M's (omega, v) block S~
        v0 = -np.cross(omega0, S) / M0[0, 0]  # Basilisk's centre of mass starts at rest
        x0 = sc.pack_state(eta=eta0, omega_BN_B=omega0, v_BN_B=v0)
        xs = sc.rk4(x0, job["h"], round(job["t_end"] / job["h"]))
        _, _, eta, _, omega, _ = sc.split(xs)
        theta_b, omega_b = np.array(bsk["theta"]), np.array(bsk["omega"])
        assert theta_b.shape == (xs.shape[0],) and np.abs(omega_b - omega0).max() > 1e-2 * theta0
        assert np.abs(omega_b[:, 2]).max() > 0.1 * np.abs(omega_b).max()  # the hub turns about every axis
        errors.append(
            (
                np.abs(eta[:, 0] / np.sqrt(mu) - theta_b).max() / np.abs(theta_b).max(),
                np.abs(omega - omega_b).max() / np.abs(omega_b).max(),
            )
        )
    for (theta0, omega0), (e_theta, e_omega) in zip(job["cases"], errors):
        report("hinged panel", theta0=theta0, spin=np.linalg.norm(omega0), theta=e_theta, omega=e_omega)
    assert max(errors[0]) <= 1e-6, errors
    for k in range(2):
        assert 8.0 <= errors[1][k] / errors[0][k] <= 10.0, errors
    assert max(errors[2]) <= 1e-5, errors


# --------------------------------------------------------------------------- the attitude loop


def boom_vehicle(n_modes, ne=6):
    """A 60 kg m^2 hub (planar yaw) with a 5 m, 10 kg boom bending in the yaw plane (first mode
    1.5 rad/s) rooted 0.5 m from its centre of mass, and the same boom's finite-element model."""
    ei = (1.5 / cantilever_roots(1)[0] ** 2) ** 2 * 2.0 * 5.0**4
    bm = beam(5.0, ne, E=70e9, rho=2700.0, A=2.0 / 2700.0, Iy=ei / 70e9, bending="y")
    sc = FlexibleSpacecraft(80.0, np.zeros(3), np.diag([40.0, 50.0, 60.0]))
    sc.attach("boom", cantilever_modes(bm, n_modes), np.eye(3), (0.5, 0.0, 0.0))
    return sc, bm


def hub_and_beam_fe(bm, hub_mass, hub_inertia, root_x):
    """The planar hub + beam finite-element model: coordinates ``[y_B, psi, uy_1, rz_1, ...]``
    (absolute nodal deflections), the root node welded to the hub (``uy_0 = y_B + root_x psi``,
    ``rz_0 = psi``); returns M, K."""
    n = bm.M_full.shape[0]
    T = np.zeros((n, n))
    T[bm.dofs[0, UY], 0:2] = (1.0, root_x)
    T[bm.dofs[0, RZ], 1] = 1.0
    free = bm.free
    T[free, 2 + np.arange(len(free))] = 1.0
    M = T.T @ bm.M_full @ T
    M[0, 0] += hub_mass
    M[1, 1] += hub_inertia
    return M, T.T @ bm.K_full @ T


def test_attitude_loop_rings_at_the_coupled_frequency():
    """The hub + boom, every mode retained: the linearized modal model's free-free frequencies
    equal the hub + beam finite-element model's (1e-9). Under a PD attitude law at 20 Hz
    (zero-order hold) commanding a 1 mrad yaw step, the yaw angle and rate from hopsim (4 modes,
    RK4 at 2 ms) follow the finite-element closed loop discretized exactly (``expm``) within 1e-3
    of their peaks (the 8 modes left out), while a rigid boom's loop is off by more than 10 % (its
    rate by 59 %): the boom's vibration is in the attitude loop."""
    sc, bm = boom_vehicle(12)
    M0 = sc.mass_matrix(np.zeros(12))
    keep = [1, 5, *range(6, 18)]  # v_y, omega_z, the modes
    K0 = np.diag([0.0, 0.0, *sc.arrays.omega**2])
    ours = np.sqrt(np.abs(eigh(K0, M0[np.ix_(keep, keep)], eigvals_only=True)[2:]))
    M_fe, K_fe = hub_and_beam_fe(bm, 80.0, 60.0, 0.5)
    fe = np.sqrt(np.abs(eigh(K_fe, M_fe, eigvals_only=True)[2:]))
    report("free-free frequencies", relative=np.abs(ours / fe - 1).max(), first=fe[0])
    assert np.abs(ours / fe - 1).max() <= 1e-9
    assert fe[0] > 1.2 * sc.arrays.omega[0]  # the free hub stiffens the boom's first mode

    kp, kd, period, T, psi_ref = 100.0, 100.0, 0.05, 30.0, 1e-3

    def fe_loop(M, K):
        n = M.shape[0]
        A = np.zeros((2 * n + 1, 2 * n + 1))
        A[0:n, n : 2 * n] = np.eye(n)
        A[n : 2 * n, 0:n] = -np.linalg.solve(M, K)
        A[n : 2 * n, 2 * n] = np.linalg.solve(M, np.eye(n)[1])  # the torque on psi
        E = expm(A * period)
        s = np.zeros(2 * n)
        out = [s[[1, n + 1]]]
        for _ in range(round(T / period)):
            tau = -kp * (s[1] - psi_ref) - kd * s[n + 1]
            s = E[0 : 2 * n, 0 : 2 * n] @ s + E[0 : 2 * n, 2 * n] * tau
            out.append(s[[1, n + 1]])
        return np.array(out)

    reference = fe_loop(M_fe, K_fe)
    rigid = np.zeros((M_fe.shape[0], 2))  # the boom rigid: every node follows the hub
    x_nodes = bm.x_nodes[1:] + 0.5
    rigid[0, 0] = rigid[1, 1] = 1.0
    rigid[2::2, 0], rigid[2::2, 1], rigid[3::2, 1] = 1.0, x_nodes, 1.0
    rigid_loop = fe_loop(rigid.T @ M_fe @ rigid, np.zeros((2, 2)))

    sc, _ = boom_vehicle(4)
    x = sc.pack_state()
    ours = [(0.0, 0.0)]
    for _ in range(round(T / period)):
        q, w = x[3:7], x[14:17]
        psi = 2.0 * np.arctan2(q[2], q[3])
        tau = -kp * (psi - psi_ref) - kd * w[2]
        x = sc.rk4(x, 2e-3, 25, sc.loads(torque_B=(0.0, 0.0, tau)))[-1]
        ours.append((2.0 * np.arctan2(x[5], x[6]), x[16]))
    ours = np.array(ours)
    for c in range(2):
        peak = np.abs(reference[:, c]).max()
        ours_err = np.abs(ours[:, c] - reference[:, c]).max() / peak
        report(
            "attitude loop",
            yaw_rate=c,
            hopsim=ours_err,
            rigid_boom=np.abs(rigid_loop[:, c] - reference[:, c]).max() / peak,
        )
        assert ours_err <= 1e-3
        assert np.abs(rigid_loop[:, c] - reference[:, c]).max() >= 0.1 * peak


# --------------------------------------------------------------------------- the NPZ files


def small_appendage():
    bm = beam(LENGTH, 4, E=E, rho=RHO, A=AREA, Iy=IY, Iz=IZ, G=SHEAR, J=TORSION, bending="yz", torsion=True)
    return cantilever_modes(bm, 5, damping=[0.01, 0.02, 0.02, 0.05, 0.1], nodes={"root": 0, "mid": 2, "tip": 4})


def test_npz_round_trip(tmp_path):
    app = small_appendage()
    path = save_modes(tmp_path / "boom.npz", app)
    back = load_modes(path)
    for key, value in app.as_dict().items():
        assert np.array_equal(back.as_dict()[key], value), key
    assert back.node_names == ("root", "mid", "tip") and back.node("mid") == 1
    # the first-order file: no J1, J2, G
    first = {k: v for k, v in app.as_dict().items() if k not in ("J1", "J2", "G")}
    np.savez(tmp_path / "first.npz", **first)
    loaded = load_modes(tmp_path / "first.npz")
    assert not loaded.J2.any() and np.array_equal(loaded.P, app.P)


def _damaged(key, value):
    def damage(d):
        d = dict(d)
        if value is None:
            del d[key]
        else:
            d[key] = value(d[key]) if callable(value) else value
        return d

    return damage


def _nan(a):
    a = a.copy()
    a.flat[1] = np.nan
    return a


def _negate_first(a):
    a = a.copy()
    a[0] = -a[0]
    return a


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_damaged("frequency", _nan), "'frequency' has values that are not finite"),
        (_damaged("node_translations", _nan), "'node_translations' has values that are not finite"),
        (_damaged("frequency", _negate_first), "'frequency' must be positive"),
        (_damaged("damping", lambda a: a + 1.0), "'damping' ratios must lie in [0, 1)"),
        (_damaged("P", lambda a: a[:, :-1]), "'P' must have shape (3, 5)"),
        (_damaged("J2", lambda a: a[0]), "'J2' must have shape (5, 5, 3, 3)"),
        (_damaged("inertia", lambda a: a + np.triu(np.ones((3, 3)), 1)), "'inertia' is not symmetric"),
        (_damaged("mass", np.array(0.0)), "'mass' must be positive"),
        (_damaged("H", lambda a: 100.0 * a), "not positive semi-definite"),
        (_damaged("node_rotations", None), "missing key(s) ['node_rotations']"),
        (lambda d: {**d, "stiffness": np.eye(2)}, "unknown key(s) ['stiffness']"),
        (_damaged("format", np.array("other-1")), "expected 'hopsim-modes-1'"),
    ],
)
def test_damaged_npz_is_refused(tmp_path, damage, message):
    d = damage(small_appendage().as_dict())
    path = tmp_path / "bad.npz"
    np.savez(path, **d)
    with pytest.raises(ValueError) as err:
        load_modes(path)
    assert message in str(err.value) and "bad.npz" in str(err.value)


def test_not_an_npz_file_is_refused(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="not a readable NPZ file"):
        load_modes(path)
    with pytest.raises(ValueError, match="not a regular file"):
        load_modes(tmp_path)
    with pytest.raises(ValueError, match="'damping' ratios"):
        ModalAppendage(**{**_fields(small_appendage()), "damping": np.full(5, 1.0)})


def _fields(app):
    d = app.as_dict()
    del d["format"]
    d["mass"] = float(d["mass"])
    d["node_names"] = tuple(d["node_names"].tolist())
    return d
