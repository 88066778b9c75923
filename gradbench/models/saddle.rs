// GradBench `saddle`: min over p1 of max over p2 of f(p1, p2), each by the gradient descent of
// GradBench's `gd.hpp`, the inner gradient taken inside the function the outer one
// differentiates (nested AD). `outer_forward`/`inner_forward` choose the mode of each level:
// `jitdiff::grad_forward` or `jitdiff::grad_reverse`, both exact under jitdiff.

fn f(p1x: f64, p1y: f64, p2x: f64, p2y: f64) -> f64 {
    (p1x * p1x + p1y * p1y) - (p2x * p2x + p2y * p2y)
}

// The gradient of f in p2 (the inner derivative).
fn inner_grad(p1x: f64, p1y: f64, p2x: f64, p2y: f64, forward: bool) -> (f64, f64) {
    if forward {
        jitdiff::grad_forward(|(a, b)| f(p1x, p1y, a, b), (p2x, p2y))
    } else {
        jitdiff::grad_reverse(|(a, b)| f(p1x, p1y, a, b), (p2x, p2y))
    }
}

// argmax over p2 of f(p1, p2) from (s0, s1): gd.hpp's descent on -f.
fn argmax_p2(p1x: f64, p1y: f64, s0: f64, s1: f64, forward: bool) -> (f64, f64) {
    let (mut x0, mut x1) = (s0, s1);
    let mut fx = -f(p1x, p1y, x0, x1);
    let (g0, g1) = inner_grad(p1x, p1y, x0, x1, forward);
    let (mut g0, mut g1) = (-g0, -g1);
    let mut i = 0;
    let mut eta = 1e-5;
    loop {
        if (g0 * g0 + g1 * g1).sqrt() <= 1e-5 {
            return (x0, x1);
        } else if i == 10 {
            eta *= 2.0;
            i = 0;
        } else {
            let (y0, y1) = (x0 - eta * g0, x1 - eta * g1);
            if ((x0 - y0) * (x0 - y0) + (x1 - y1) * (x1 - y1)).sqrt() <= 1e-5 {
                return (x0, x1);
            }
            let fy = -f(p1x, p1y, y0, y1);
            if fy < fx {
                x0 = y0;
                x1 = y1;
                fx = fy;
                let (h0, h1) = inner_grad(p1x, p1y, x0, x1, forward);
                g0 = -h0;
                g1 = -h1;
                i += 1;
            } else {
                eta /= 2.0;
                i = 0;
            }
        }
    }
}

// max over p2 of f(p1, p2): the outer objective.
fn max_f(p1x: f64, p1y: f64, s0: f64, s1: f64, forward: bool) -> f64 {
    let (y0, y1) = argmax_p2(p1x, p1y, s0, s1, forward);
    f(p1x, p1y, y0, y1)
}

// The gradient of the outer objective in p1: differentiates the inner descent, whose steps
// themselves take gradients.
fn outer_grad(p1x: f64, p1y: f64, s0: f64, s1: f64, outer_forward: bool, inner_forward: bool) -> (f64, f64) {
    if outer_forward {
        jitdiff::grad_forward(|(a, b)| max_f(a, b, s0, s1, inner_forward), (p1x, p1y))
    } else {
        jitdiff::grad_reverse(|(a, b)| max_f(a, b, s0, s1, inner_forward), (p1x, p1y))
    }
}

// argmin over p1 of max_f, from (s0, s1).
fn argmin_p1(s0: f64, s1: f64, outer_forward: bool, inner_forward: bool) -> (f64, f64) {
    let (mut x0, mut x1) = (s0, s1);
    let mut fx = max_f(x0, x1, s0, s1, inner_forward);
    let (mut g0, mut g1) = outer_grad(x0, x1, s0, s1, outer_forward, inner_forward);
    let mut i = 0;
    let mut eta = 1e-5;
    loop {
        if (g0 * g0 + g1 * g1).sqrt() <= 1e-5 {
            return (x0, x1);
        } else if i == 10 {
            eta *= 2.0;
            i = 0;
        } else {
            let (y0, y1) = (x0 - eta * g0, x1 - eta * g1);
            if ((x0 - y0) * (x0 - y0) + (x1 - y1) * (x1 - y1)).sqrt() <= 1e-5 {
                return (x0, x1);
            }
            let fy = max_f(y0, y1, s0, s1, inner_forward);
            if fy < fx {
                x0 = y0;
                x1 = y1;
                fx = fy;
                let (h0, h1) = outer_grad(x0, x1, s0, s1, outer_forward, inner_forward);
                g0 = h0;
                g1 = h1;
                i += 1;
            } else {
                eta /= 2.0;
                i = 0;
            }
        }
    }
}

// The saddle point from `start`: p1 by the nested descent, then p2 for that p1 (with the
// outer level's mode, as the eval asks).
fn saddle(s0: f64, s1: f64, outer_forward: bool, inner_forward: bool) -> (f64, f64, f64, f64) {
    let (p1x, p1y) = argmin_p1(s0, s1, outer_forward, inner_forward);
    let (p2x, p2y) = argmax_p2(p1x, p1y, s0, s1, outer_forward);
    (p1x, p1y, p2x, p2y)
}
