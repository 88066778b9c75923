// GradBench `particle`: a charged particle, accelerated by the field of two fixed charges (one
// placed by the control `w`), integrated by Euler's method until it crosses the x axis; the
// control is chosen by GradBench's `gd.hpp` descent so that it crosses at the origin. The
// force is the gradient of the potential, taken inside the simulation that the descent
// differentiates (nested AD). `outer_forward`/`inner_forward` choose the mode of each level.

fn dist(px: f64, py: f64, x: f64, y: f64) -> f64 {
    ((px - x) * (px - x) + (py - y) * (py - y)).sqrt()
}

// The potential at (x, y) of the charges at (10, 10 - w) and (10, 0).
fn accel(w: f64, x: f64, y: f64) -> f64 {
    let mut a = 0.0;
    a += 1.0 / dist(10.0, 10.0 - w, x, y);
    a += 1.0 / dist(10.0, 0.0, x, y);
    a
}

// The gradient of the potential at (x, y) (the inner derivative).
fn force(w: f64, x: f64, y: f64, forward: bool) -> (f64, f64) {
    if forward {
        jitdiff::grad_forward(|(a, b)| accel(w, a, b), (x, y))
    } else {
        jitdiff::grad_reverse(|(a, b)| accel(w, a, b), (x, y))
    }
}

// x(t_f)^2 where the trajectory crosses the x axis.
fn naive_euler(w: f64, forward: bool) -> f64 {
    let (mut x, mut y) = (0.0, 8.0);
    let (mut xdot, mut ydot) = (0.75, 0.0);
    let delta_t = 1e-1;
    loop {
        let (gx, gy) = force(w, x, y, forward);
        let (xddot, yddot) = (-1.0 * gx, -1.0 * gy);
        x += delta_t * xdot;
        y += delta_t * ydot;
        if y <= 0.0 {
            let delta_t_f = -y / ydot;
            let x_t_f = x + delta_t_f * xdot;
            return x_t_f * x_t_f;
        }
        xdot += delta_t * xddot;
        ydot += delta_t * yddot;
    }
}

// d naive_euler / dw (the outer derivative, through the simulation and its inner gradients).
fn slope(w: f64, outer_forward: bool, inner_forward: bool) -> f64 {
    if outer_forward {
        jitdiff::grad_forward(|v| naive_euler(v, inner_forward), w)
    } else {
        jitdiff::grad_reverse(|v| naive_euler(v, inner_forward), w)
    }
}

// argmin over w of naive_euler, from w0: gd.hpp's descent in one dimension.
fn particle(w0: f64, outer_forward: bool, inner_forward: bool) -> f64 {
    let mut w = w0;
    let mut fw = naive_euler(w, inner_forward);
    let mut g = slope(w, outer_forward, inner_forward);
    let mut i = 0;
    let mut eta = 1e-5;
    loop {
        if g.abs() <= 1e-5 {
            return w;
        } else if i == 10 {
            eta *= 2.0;
            i = 0;
        } else {
            let v = w - eta * g;
            if (w - v).abs() <= 1e-5 {
                return w;
            }
            let fv = naive_euler(v, inner_forward);
            if fv < fw {
                w = v;
                fw = fv;
                g = slope(w, outer_forward, inner_forward);
                i += 1;
            } else {
                eta /= 2.0;
                i = 0;
            }
        }
    }
}
