//! [`minimize`]: L-BFGS that always returns. argmin's L-BFGS and More–Thuente line search do the
//! work; around them, a guard keeps every non-finite number away from the line search, scales the
//! first step, restarts the method when a line search fails and bounds the number of evaluations.

use super::argmin::core::{
    CostFunction, Error as ArgminError, Gradient, IterState, KV, LineSearch, Problem, Solver, State, TerminationStatus,
};
use super::argmin::solver::linesearch::MoreThuenteLineSearch;
use super::argmin::solver::quasinewton::LBFGS;
use crate::error::Error;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The options of [`minimize`], builder-style. The defaults are those of scipy's L-BFGS-B:
/// `memory(10)`, `gradient_tolerance(1e-5)`, `f_tolerance(2.22e-9)` (`factr = 1e7` times the
/// machine epsilon), `max_iters(15000)`, `max_evaluations(15000)`.
///
/// ```
/// use jitdiff::optim::MinimizeOptions;
/// let options = MinimizeOptions::new().gradient_tolerance(1e-10).f_tolerance(0.0).max_iters(500);
/// assert_eq!(options.get_max_iters(), 500);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MinimizeOptions {
    max_iters: u64,
    max_evaluations: u64,
    gradient_tolerance: f64,
    f_tolerance: f64,
    memory: usize,
}

impl Default for MinimizeOptions {
    fn default() -> MinimizeOptions {
        MinimizeOptions {
            max_iters: 15_000,
            max_evaluations: 15_000,
            gradient_tolerance: 1e-5,
            f_tolerance: 1e7 * f64::EPSILON,
            memory: 10,
        }
    }
}

impl MinimizeOptions {
    /// The defaults.
    pub fn new() -> MinimizeOptions {
        MinimizeOptions::default()
    }

    /// Stop after this many iterations (line searches).
    pub fn max_iters(mut self, n: u64) -> MinimizeOptions {
        self.max_iters = n;
        self
    }

    /// Stop after this many evaluations of the objective (each gives value and gradient; the
    /// start counts). The hard bound on the work done: `minimize` never evaluates more often.
    pub fn max_evaluations(mut self, n: u64) -> MinimizeOptions {
        self.max_evaluations = n.max(1);
        self
    }

    /// Converged when the largest gradient entry, in absolute value, is at most `tol`.
    pub fn gradient_tolerance(mut self, tol: f64) -> MinimizeOptions {
        self.gradient_tolerance = tol;
        self
    }

    /// Converged when an iteration lowers the value by at most `tol · max(|f_k|, |f_k+1|, 1)`
    /// (scipy's `ftol`). 0 switches the test off except for an iteration that gains nothing.
    pub fn f_tolerance(mut self, tol: f64) -> MinimizeOptions {
        self.f_tolerance = tol;
        self
    }

    /// The number of correction pairs L-BFGS keeps: at least 1, at most
    /// [`MinimizeOptions::MAX_MEMORY`] (L-BFGS reserves room for them up front; `usize::MAX`
    /// meaning "unlimited" gets the most there is).
    ///
    /// ```
    /// use jitdiff::optim::MinimizeOptions;
    /// assert_eq!(MinimizeOptions::new().memory(0).get_memory(), 1);
    /// assert_eq!(MinimizeOptions::new().memory(usize::MAX).get_memory(), MinimizeOptions::MAX_MEMORY);
    /// ```
    pub fn memory(mut self, m: usize) -> MinimizeOptions {
        self.memory = m.clamp(1, Self::MAX_MEMORY);
        self
    }

    /// The most correction pairs [`MinimizeOptions::memory`] keeps (far more than L-BFGS gains
    /// from: scipy's default is 10).
    pub const MAX_MEMORY: usize = 1024;

    /// See [`MinimizeOptions::max_iters`].
    pub fn get_max_iters(&self) -> u64 {
        self.max_iters
    }

    /// See [`MinimizeOptions::max_evaluations`].
    pub fn get_max_evaluations(&self) -> u64 {
        self.max_evaluations
    }

    /// See [`MinimizeOptions::gradient_tolerance`].
    pub fn get_gradient_tolerance(&self) -> f64 {
        self.gradient_tolerance
    }

    /// See [`MinimizeOptions::f_tolerance`].
    pub fn get_f_tolerance(&self) -> f64 {
        self.f_tolerance
    }

    /// See [`MinimizeOptions::memory`].
    pub fn get_memory(&self) -> usize {
        self.memory
    }
}

/// What [`minimize`] found: the best point it evaluated, and why it stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Minimum {
    /// The point with the lowest value evaluated.
    pub x: Vec<f64>,
    /// The value there.
    pub value: f64,
    /// The largest gradient entry there, in absolute value (the norm the gradient tolerance
    /// bounds).
    pub gradient_norm: f64,
    /// Iterations (line searches) done.
    pub iterations: u64,
    /// Evaluations of the objective, the start included.
    pub evaluations: u64,
    /// Whether a tolerance was met (otherwise a limit was reached or no progress was possible).
    pub converged: bool,
    /// Why it stopped, in words.
    pub termination: String,
}

/// Trial points per line search before it is abandoned (scipy's `maxls` is 20; the extra room
/// is for searches that must back off from a non-finite region).
const MAX_TRIALS: u32 = 30;

/// Minimise `f` from `x0` with L-BFGS (argmin's, with the More–Thuente line search). `f(x, g)`
/// writes the gradient at `x` into `g` and returns the value.
///
/// It always returns, after at most [`MinimizeOptions::max_evaluations`] evaluations, with the
/// best point evaluated:
///
/// - A value or gradient that is NaN or infinite at a trial point (or `f` returning
///   [`Error::NonFinite`] there) never reaches the line search: it sees a point that is worse
///   than the start and slopes back towards it, so it backs off. The first step is at most of
///   unit length (L-BFGS's first direction, `-g0`, is scaled down to unit length: an initial
///   inverse Hessian of `1/|g0|`), so a badly scaled start does not overflow.
/// - A line search that fails (no acceptable point in 30 trials, a point off the finite numbers,
///   a direction that does not descend) restarts L-BFGS from the best point, with its memory
///   cleared, if anything was gained since the last restart; otherwise `minimize` stops.
///
/// Errors: [`Error::NonFinite`] when `x0`, the value or the gradient at `x0` is not finite;
/// any other error of `f`, as it is.
pub fn minimize<F>(f: F, x0: &[f64], options: &MinimizeOptions) -> Result<Minimum, Error>
where
    F: Fn(&[f64], &mut [f64]) -> Result<f64, Error> + Sync,
{
    if let Some((k, &v)) = x0.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what: format!("starting point entry {k}"), value: v });
    }
    let mut g0 = vec![0.0; x0.len()];
    let f0 = f(x0, &mut g0)?;
    if !f0.is_finite() {
        return Err(Error::NonFinite { what: "value at the starting point".into(), value: f0 });
    }
    if let Some((k, &v)) = g0.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what: format!("gradient entry {k} at the starting point"), value: v });
    }
    let tracker = Mutex::new(Tracker::new(x0, f0, g0, options.max_evaluations));
    let mut driver = Driver { f: &f, tracker: &tracker, options, iterations: 0 };
    let (converged, termination) = driver.run()?;
    let iterations = driver.iterations;
    let t = lock(&tracker);
    Ok(Minimum {
        x: t.best.x.clone(),
        value: t.best.f,
        gradient_norm: max_abs(&t.best.g),
        iterations,
        evaluations: t.evaluations,
        converged,
        termination,
    })
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A point with its value and gradient.
#[derive(Clone)]
struct Point {
    x: Vec<f64>,
    f: f64,
    g: Vec<f64>,
}

/// Why the guarded objective refused to evaluate: it answers argmin with an error, and the driver
/// reads the reason here.
enum Refusal {
    /// The evaluation budget is spent.
    Budget,
    /// The line search used up its trials.
    Trials,
    /// The solver asked for a point that is not finite itself.
    BadPoint,
    /// The objective failed with an error other than a non-finite result.
    Failed(Error),
}

/// Everything the guarded objective saw: the last evaluation (argmin asks for cost and gradient
/// separately), the best point, the anchor of the current line search.
struct Tracker {
    evaluations: u64,
    max_evaluations: u64,
    last: Point,
    /// Whether `last` is a stand-in for a non-finite result.
    last_fake: bool,
    best: Point,
    /// The iterate the current line search starts from.
    anchor: Point,
    /// Evaluations since the anchor was set.
    trials: u32,
    refusal: Option<Refusal>,
}

impl Tracker {
    fn new(x0: &[f64], f0: f64, g0: Vec<f64>, max_evaluations: u64) -> Tracker {
        let start = Point { x: x0.to_vec(), f: f0, g: g0 };
        Tracker {
            evaluations: 1,
            max_evaluations,
            last: start.clone(),
            last_fake: false,
            best: start.clone(),
            anchor: start,
            trials: 0,
            refusal: None,
        }
    }

    /// Count a trial of the line search (a request for the value: the line search asks for the
    /// value, then the gradient, at each trial point), refusing it past the limit.
    fn trial(&mut self) -> Result<(), ArgminError> {
        self.trials += 1;
        if self.trials > MAX_TRIALS && self.refusal.is_none() {
            self.refusal = Some(Refusal::Trials);
        }
        self.refuse()
    }

    fn refuse(&self) -> Result<(), ArgminError> {
        match self.refusal {
            Some(_) => Err(ArgminError::msg("jitdiff::optim::minimize: evaluation refused")),
            None => Ok(()),
        }
    }

    /// Bring `last` to `x`.
    fn evaluate<F>(&mut self, f: &F, x: &[f64]) -> Result<(), ArgminError>
    where
        F: Fn(&[f64], &mut [f64]) -> Result<f64, Error>,
    {
        self.refuse()?;
        if self.last.x == x {
            return Ok(());
        }
        if x.iter().any(|v| !v.is_finite()) {
            self.refusal = Some(Refusal::BadPoint);
        } else if self.evaluations >= self.max_evaluations {
            self.refusal = Some(Refusal::Budget);
        }
        self.refuse()?;
        self.evaluations += 1;
        self.last.x.copy_from_slice(x);
        let finite = match f(x, &mut self.last.g) {
            Ok(v) => {
                self.last.f = v;
                v.is_finite() && self.last.g.iter().all(|g| g.is_finite())
            }
            Err(Error::NonFinite { .. }) => false,
            Err(e) => {
                self.refusal = Some(Refusal::Failed(e));
                // `last.x` no longer matches `last.f`, `last.g`.
                self.last.x.fill(f64::NAN);
                return Err(ArgminError::msg("jitdiff::optim::minimize: the objective failed"));
            }
        };
        self.last_fake = !finite;
        if finite {
            if self.last.f < self.best.f {
                self.best.clone_from(&self.last);
            }
        } else {
            self.stand_in();
        }
        self.refuse()
    }

    /// A non-finite result at `last.x` becomes a finite one that a line search from the anchor
    /// backs off from: higher than the anchor's value by the decrease the anchor's gradient
    /// predicts for the step (and at least 1 + |f|), sloping upwards along the step.
    fn stand_in(&mut self) {
        let step: Vec<f64> = self.last.x.iter().zip(&self.anchor.x).map(|(x, a)| x - a).collect();
        let length = dot(&step, &step).sqrt();
        let slope = dot(&self.anchor.g, &self.anchor.g).sqrt().max(f64::MIN_POSITIVE);
        let predicted = dot(&self.anchor.g, &step).abs();
        self.last.f = self.anchor.f + 2.0 * predicted + 1.0 + self.anchor.f.abs();
        if length.is_nan() || length <= 0.0 || !self.last.f.is_finite() {
            // Not a step from the anchor (or a hopeless scale): refuse instead.
            self.last.x.fill(f64::NAN);
            self.refusal = Some(Refusal::BadPoint);
            return;
        }
        for (g, s) in self.last.g.iter_mut().zip(&step) {
            *g = slope * s / length;
        }
    }
}

/// The objective argmin sees.
struct Guarded<'a, F> {
    f: &'a F,
    tracker: &'a Mutex<Tracker>,
}

impl<F> CostFunction for Guarded<'_, F>
where
    F: Fn(&[f64], &mut [f64]) -> Result<f64, Error>,
{
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Vec<f64>) -> Result<f64, ArgminError> {
        let mut t = lock(self.tracker);
        t.trial()?;
        t.evaluate(self.f, x)?;
        Ok(t.last.f)
    }
}

impl<F> Gradient for Guarded<'_, F>
where
    F: Fn(&[f64], &mut [f64]) -> Result<f64, Error>,
{
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, ArgminError> {
        let mut t = lock(self.tracker);
        t.evaluate(self.f, x)?;
        Ok(t.last.g.clone())
    }
}

type Vector = Vec<f64>;
type MoreThuente = MoreThuenteLineSearch<Vector, Vector, f64>;
type LbfgsState = IterState<Vector, Vector, (), (), (), f64>;

/// More–Thuente whose first search (of an L-BFGS run) tries a step of at most unit length:
/// L-BFGS's first direction is `-g0`, which this scales to unit length (the line search returns
/// the point, so the scale is invisible to L-BFGS). Steps may be as short as the line search
/// likes (argmin's default lower bound, `sqrt(eps)` times the direction, is too long for badly
/// scaled problems).
#[derive(Clone)]
struct ScaledFirstStep {
    inner: MoreThuente,
    searches: u64,
}

impl LineSearch<Vector, f64> for ScaledFirstStep {
    fn search_direction(&mut self, mut direction: Vector) {
        if self.searches == 0 {
            let length = dot(&direction, &direction).sqrt();
            if length > 1.0 && length.is_finite() {
                direction.iter_mut().for_each(|d| *d /= length);
            }
        }
        self.inner.search_direction(direction);
        self.searches += 1;
    }

    fn initial_step_length(&mut self, alpha: f64) -> Result<(), ArgminError> {
        self.inner.initial_step_length(alpha)
    }
}

impl<O> Solver<O, LbfgsState> for ScaledFirstStep
where
    MoreThuente: Solver<O, LbfgsState>,
{
    fn name(&self) -> &str {
        "More-Thuente line search"
    }

    fn init(&mut self, problem: &mut Problem<O>, state: LbfgsState) -> Result<(LbfgsState, Option<KV>), ArgminError> {
        self.inner.init(problem, state)
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: LbfgsState,
    ) -> Result<(LbfgsState, Option<KV>), ArgminError> {
        self.inner.next_iter(problem, state)
    }

    fn terminate(&mut self, state: &LbfgsState) -> TerminationStatus {
        self.inner.terminate(state)
    }
}

/// Runs L-BFGS iteration by iteration, checking the tolerances and restarting it when a line
/// search fails.
struct Driver<'a, F> {
    f: &'a F,
    tracker: &'a Mutex<Tracker>,
    options: &'a MinimizeOptions,
    iterations: u64,
}

/// How one L-BFGS run ended.
enum RunEnd {
    /// Stop: converged or a limit (whether converged, why).
    Stop(bool, String),
    /// A line search failed (why); restart if the best point improved.
    Failed(String),
}

impl<F> Driver<'_, F>
where
    F: Fn(&[f64], &mut [f64]) -> Result<f64, Error> + Sync,
{
    fn run(&mut self) -> Result<(bool, String), Error> {
        loop {
            let start = lock(self.tracker).best.clone();
            if max_abs(&start.g) <= self.options.gradient_tolerance {
                return Ok((true, "gradient tolerance reached".into()));
            }
            let end = self.lbfgs(start.clone())?;
            let why = match end {
                RunEnd::Stop(converged, why) => return Ok((converged, why)),
                RunEnd::Failed(why) => why,
            };
            let mut t = lock(self.tracker);
            let why = match t.refusal.take() {
                Some(Refusal::Failed(e)) => return Err(e),
                Some(Refusal::Budget) => {
                    return Ok((false, format!("evaluation limit ({}) reached", self.options.max_evaluations)));
                }
                Some(Refusal::Trials) => format!("the line search found no acceptable point in {MAX_TRIALS} trials"),
                Some(Refusal::BadPoint) => "the line search left the finite numbers".into(),
                None => why,
            };
            if t.best.f >= start.f {
                return Ok((false, format!("no progress possible: {why}")));
            }
        }
    }

    /// One L-BFGS run from `start` (a finite point with its value and gradient).
    fn lbfgs(&mut self, start: Point) -> Result<RunEnd, Error> {
        let inner = MoreThuente::new().with_bounds(0.0, f64::INFINITY).expect("valid bounds");
        let line_search = ScaledFirstStep { inner, searches: 0 };
        let mut solver = LBFGS::new(line_search, self.options.memory);
        let mut problem = Problem::new(Guarded { f: self.f, tracker: self.tracker });
        let state = LbfgsState::new().param(start.x).cost(start.f).gradient(start.g);
        // With the cost and gradient given, `init` evaluates nothing.
        let (mut state, _) = match solver.init(&mut problem, state) {
            Ok(s) => s,
            Err(e) => return Ok(RunEnd::Failed(e.to_string())),
        };
        loop {
            if self.iterations >= self.options.max_iters {
                return Ok(RunEnd::Stop(false, format!("iteration limit ({}) reached", self.options.max_iters)));
            }
            let (x_k, f_k, g_k) = match (state.get_param(), state.get_gradient()) {
                (Some(x), Some(g)) => (x.clone(), state.get_cost(), g.clone()),
                _ => return Ok(RunEnd::Failed("L-BFGS lost its iterate".into())),
            };
            {
                let mut t = lock(self.tracker);
                t.anchor = Point { x: x_k.clone(), f: f_k, g: g_k.clone() };
                t.trials = 0;
            }
            let next = solver.next_iter(&mut problem, state);
            self.iterations += 1;
            state = match next {
                Ok((s, _)) => s,
                Err(e) => return Ok(RunEnd::Failed(e.to_string())),
            };
            if let Some(reason) = state.get_termination_reason() {
                return Ok(RunEnd::Failed(reason.to_string()));
            }
            state.increment_iter();
            let (x, f_new, g) = match (state.get_param(), state.get_gradient()) {
                (Some(x), Some(g)) => (x, state.get_cost(), g),
                _ => return Ok(RunEnd::Failed("L-BFGS lost its iterate".into())),
            };
            {
                let t = lock(self.tracker);
                if t.last_fake && t.last.x == *x {
                    return Ok(RunEnd::Failed("the line search stopped at a non-finite point".into()));
                }
            }
            if *x == x_k {
                return Ok(RunEnd::Failed("the line search did not move".into()));
            }
            if f_new.is_nan() || f_new > f_k {
                return Ok(RunEnd::Failed("the line search did not decrease the value".into()));
            }
            if max_abs(g) <= self.options.gradient_tolerance {
                return Ok(RunEnd::Stop(true, "gradient tolerance reached".into()));
            }
            let scale = f_k.abs().max(f_new.abs()).max(1.0);
            if f_k - f_new <= self.options.f_tolerance * scale {
                return Ok(RunEnd::Stop(true, "f tolerance reached".into()));
            }
            // A step that does not satisfy the curvature condition (the line search stopped
            // early) would spoil the L-BFGS matrix: start afresh.
            let s: Vec<f64> = x.iter().zip(&x_k).map(|(a, b)| a - b).collect();
            let y: Vec<f64> = g.iter().zip(&g_k).map(|(a, b)| a - b).collect();
            let curvature = dot(&s, &y);
            if curvature.is_nan() || curvature <= 0.0 {
                return Ok(RunEnd::Failed("the step lost positive curvature".into()));
            }
        }
    }
}
