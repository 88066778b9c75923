"""CasADi's sparse Hessian and Jacobian on the problems of benches/sparse.rs, for comparison
(issue #28). Not part of the tests; needs CasADi from the package registry:

    python3 -m venv /tmp/casadi-venv && /tmp/casadi-venv/bin/pip install casadi numpy
    /tmp/casadi-venv/bin/python benches/casadi_sparse.py [N]

Chained Rosenbrock's Hessian (value and gradient too, as SparseHessianFn gives them) and the
Broyden tridiagonal residuals' Jacobian at N = 100,000, built from vectorised SX expressions
(CasADi detects the sparsity and colours it itself), evaluated by CasADi's SX virtual machine on
one thread. Prints the set-up time (expression, derivative, Function) and the median time per
evaluation over repeated calls.
"""

import statistics
import sys
import time

import casadi as ca
import numpy as np


def timed(f, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    # The point as a CasADi DM once, so the timings leave out converting numpy arrays.
    start = ca.DM(np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(n)]))

    t = time.perf_counter()
    x = ca.SX.sym("x", n)
    f = ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    h, g = ca.hessian(f, x)
    hess = ca.Function("rosenbrock_hessian", [x], [f, g, h])
    setup = time.perf_counter() - t
    out = hess(start)
    print(f"casadi {ca.__version__}, n = {n}")
    print(f"hessian: nnz {out[2].nnz()}, set-up {setup * 1e3:.1f} ms, "
          f"per evaluation {timed(lambda: hess(start), 20) * 1e3:.2f} ms")

    t = time.perf_counter()
    y = ca.SX.sym("y", n)
    z = ca.SX(1, 1)
    prev = ca.vertcat(z, y[:-1])
    nxt = ca.vertcat(y[1:], z)
    r = (3 - 2 * y) * y - prev - 2 * nxt + 1
    jac = ca.Function("broyden_jacobian", [y], [ca.jacobian(r, y)])
    setup = time.perf_counter() - t
    out = jac(start)
    print(f"jacobian: nnz {out.nnz()}, set-up {setup * 1e3:.1f} ms, "
          f"per evaluation {timed(lambda: jac(start), 20) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
