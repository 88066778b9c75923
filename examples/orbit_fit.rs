//! Fitting a planet's starting velocity and its star's `GM` to observed positions. The model is
//! written once, in Rust, the way a physicist writes it: a 2-D vector struct with `std::ops`
//! operators and methods, a struct of the unknowns, a leapfrog integrator. `#[jitdiff::module]`
//! keeps it ordinary Rust (the observations are simulated by calling it) and generates typed
//! handles that take the struct; the gradient has one entry per field. L-BFGS
//! (`jitdiff::optim`) then recovers the truth from a guess 10-50% off.
//!
//! ```sh
//! cargo run --release --example orbit_fit
//! ```

use jitdiff::optim::{MinimizeOptions, Objective};

#[jitdiff::module]
mod orbit {
    use std::ops::{Add, Mul, Sub};

    #[derive(Clone, Copy)]
    pub struct V2 {
        pub x: f64,
        pub y: f64,
    }

    impl Add for V2 {
        type Output = V2;
        fn add(self, o: V2) -> V2 {
            V2 { x: self.x + o.x, y: self.y + o.y }
        }
    }

    impl Sub for V2 {
        type Output = V2;
        fn sub(self, o: V2) -> V2 {
            V2 { x: self.x - o.x, y: self.y - o.y }
        }
    }

    impl Mul<f64> for V2 {
        type Output = V2;
        fn mul(self, k: f64) -> V2 {
            V2 { x: self.x * k, y: self.y * k }
        }
    }

    impl V2 {
        fn norm2(&self) -> f64 {
            self.x * self.x + self.y * self.y
        }
    }

    /// The unknowns: the star's `GM` and the planet's velocity at `(1, 0)`.
    pub struct Guess {
        pub gm: f64,
        pub vx: f64,
        pub vy: f64,
    }

    /// The gravitational acceleration at `p`.
    fn gravity(p: V2, gm: f64) -> V2 {
        let r2 = p.norm2();
        p * (-gm / (r2 * r2.sqrt()))
    }

    /// Leapfrog from `(1, 0)`; after every `every` steps, the squared distance to the next
    /// observed position (`observed` = x0, y0, x1, y1, ...), summed.
    pub fn misfit(g: &Guess, observed: &[f64], every: usize, dt: f64) -> f64 {
        let mut p = V2 { x: 1.0, y: 0.0 };
        let mut v = V2 { x: g.vx, y: g.vy };
        let mut a = gravity(p, g.gm);
        let mut sum = 0.0;
        for k in 0..observed.len() / 2 {
            for _ in 0..every {
                v = v + a * (0.5 * dt);
                p = p + v * dt;
                a = gravity(p, g.gm);
                v = v + a * (0.5 * dt);
            }
            let miss = p - V2 { x: observed[2 * k], y: observed[2 * k + 1] };
            sum += miss.norm2();
        }
        sum
    }
}

/// The fit: the truth, where L-BFGS ends from a guess 10-50% off, and the misfit there.
pub fn fit() -> Result<([f64; 3], jitdiff::optim::Minimum), jitdiff::Error> {
    use orbit::{Guess, misfit};
    // Observations: positions along the true orbit, by the same leapfrog in plain Rust (the
    // model's misfit there is exactly zero).
    let truth = Guess { gm: 1.0, vx: 0.1, vy: 0.9 };
    let (every, dt, count) = (10, 0.01, 15);
    let observed = simulate(&truth, every, dt, count);
    assert_eq!(misfit(&truth, &observed, every, dt), 0.0);

    // The gradient with respect to the struct's fields, one entry each.
    let gradient = misfit::gradient_wrt(&["g_gm", "g_vx", "g_vy"])?;
    let objective = Objective::from_fn(3, |x, grad| {
        let guess = Guess { gm: x[0], vx: x[1], vy: x[2] };
        gradient.value_and_grad_into(&guess, &observed, every, dt, grad).unwrap_or(f64::NAN)
    });
    let options = MinimizeOptions::new().gradient_tolerance(1e-12).f_tolerance(0.0);
    let minimum = objective.minimize(&[1.1, 0.15, 0.8], &options)?;
    Ok(([truth.gm, truth.vx, truth.vy], minimum))
}

fn main() -> Result<(), jitdiff::Error> {
    let (truth, minimum) = fit()?;
    println!("start  GM = 1.1, v = (0.15, 0.8)");
    println!("fit    GM = {:.6}, v = ({:.6}, {:.6})", minimum.x[0], minimum.x[1], minimum.x[2]);
    println!("truth  GM = {:.6}, v = ({:.6}, {:.6})", truth[0], truth[1], truth[2]);
    println!("misfit {:.3e}", minimum.value);
    Ok(())
}

/// The observed positions: the same leapfrog in plain Rust, every `every` steps.
fn simulate(g: &orbit::Guess, every: usize, dt: f64, count: usize) -> Vec<f64> {
    let gravity = |x: f64, y: f64| {
        let r2 = x * x + y * y;
        let k = -g.gm / (r2 * r2.sqrt());
        (x * k, y * k)
    };
    let (mut x, mut y, mut vx, mut vy) = (1.0, 0.0, g.vx, g.vy);
    let (mut ax, mut ay) = gravity(x, y);
    let mut out = vec![];
    for _ in 0..count {
        for _ in 0..every {
            vx += ax * (0.5 * dt);
            vy += ay * (0.5 * dt);
            x += vx * dt;
            y += vy * dt;
            (ax, ay) = gravity(x, y);
            vx += ax * (0.5 * dt);
            vy += ay * (0.5 * dt);
        }
        out.extend([x, y]);
    }
    out
}
