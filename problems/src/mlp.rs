//! A two-layer perceptron `I → H → 1` with tanh hidden units; the loss is the mean squared error
//! over a batch: `1/B sum_b (w2 · tanh(W1 x_b + b1) + b2 - y_b)^2`.

use super::{Problem, SplitMix64};
use jitdiff_ir::ArgValue;

/// The IR text of `@mlp(w1, b1, w2, b2, x, y: slice) -> f64` (`examples/ir/mlp.ir`); all sizes
/// are derived from the slice lengths.
pub const MLP_IR: &str = include_str!("../../examples/ir/mlp.ir");

/// The entry function of [`MLP_IR`].
pub const ENTRY: &str = "mlp";

/// The seed of [`Mlp::standard`].
pub const DEFAULT_SEED: u64 = 0x6d6c_7032_3536;

/// The reference primal: mean squared error of the network on the batch.
///
/// Shapes (row-major): `w1` H×I with `H = b1.len()`, `w2` H, `x` B×I with `B = y.len()`.
/// Same operation order as the IR.
///
/// ```
/// use jitdiff_problems::mlp::mlp_loss;
/// // one input, one hidden unit with zero weights: prediction b2 = 0.5, target 1.5
/// assert_eq!(mlp_loss(&[0.0], &[0.0], &[1.0], 0.5, &[2.0], &[1.5]), 1.0);
/// ```
pub fn mlp_loss(w1: &[f64], b1: &[f64], w2: &[f64], b2: f64, x: &[f64], y: &[f64]) -> f64 {
    let inputs = w1.len() / b1.len();
    let sse = x.chunks_exact(inputs).zip(y).fold(0.0, |sse, (sample, &target)| {
        let prediction = w1.chunks_exact(inputs).zip(b1).zip(w2).fold(b2, |out, ((row, &bias), &w_out)| {
            let pre_activation = row.iter().zip(sample).fold(bias, |z, (&w, &xi)| z + w * xi);
            out + w_out * pre_activation.tanh()
        });
        let error = prediction - target;
        sse + error * error
    });
    sse / y.len() as f64
}

/// The hand-written analytic gradient of [`mlp_loss`] (the benchmarks' baseline): per sample a
/// forward pass keeping the hidden activations in `scratch` (resized; reuse it to avoid
/// allocating), then backpropagation into `grad` (overwritten), laid out as
/// `[w1 (H I) | b1 (H) | w2 (H) | b2 (1)]` — the flat layout of `GradientFn::value_and_grad`
/// for the four weight parameters of `@mlp`. Returns the loss. `grad.len()` must be
/// `H I + 2 H + 1`.
///
/// ```
/// use jitdiff_problems::mlp::{Mlp, mlp_gradient};
/// let m = Mlp::generate(3, 4, 5, 1);
/// let mut grad = vec![0.0; 4 * 3 + 2 * 4 + 1];
/// let loss = mlp_gradient(&m.w1, &m.b1, &m.w2, m.b2, &m.x, &m.y, &mut grad, &mut Vec::new());
/// assert!((loss - m.loss()).abs() < 1e-12);
/// ```
#[allow(clippy::too_many_arguments)] // the loss's own parameters, plus the two buffers
pub fn mlp_gradient(
    w1: &[f64],
    b1: &[f64],
    w2: &[f64],
    b2: f64,
    x: &[f64],
    y: &[f64],
    grad: &mut [f64],
    scratch: &mut Vec<f64>,
) -> f64 {
    let hidden = b1.len();
    let inputs = w1.len() / hidden;
    grad.fill(0.0);
    let (d_w1, rest) = grad.split_at_mut(hidden * inputs);
    let (d_b1, rest) = rest.split_at_mut(hidden);
    let (d_w2, d_b2) = rest.split_at_mut(hidden);
    scratch.clear();
    scratch.resize(hidden, 0.0);
    let activations = &mut scratch[..];
    let scale = 2.0 / y.len() as f64;
    let mut sse = 0.0;
    for (sample, &target) in x.chunks_exact(inputs).zip(y) {
        let mut prediction = b2;
        for ((a, row), (&bias, &w_out)) in activations.iter_mut().zip(w1.chunks_exact(inputs)).zip(b1.iter().zip(w2)) {
            let pre_activation = row.iter().zip(sample).fold(bias, |z, (&w, &xi)| z + w * xi);
            *a = pre_activation.tanh();
            prediction += w_out * *a;
        }
        let error = prediction - target;
        sse += error * error;
        // d loss / d prediction = 2 error / B; back through w2 . tanh(z) + b2.
        let d_prediction = scale * error;
        d_b2[0] += d_prediction;
        for h in 0..hidden {
            let a = activations[h];
            d_w2[h] += d_prediction * a;
            let d_z = d_prediction * w2[h] * (1.0 - a * a);
            d_b1[h] += d_z;
            for (dw, &xi) in d_w1[h * inputs..(h + 1) * inputs].iter_mut().zip(sample) {
                *dw += d_z * xi;
            }
        }
    }
    sse / y.len() as f64
}

/// An MLP instance: weights, inputs and targets.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    /// Number of inputs I.
    pub inputs: usize,
    /// Number of hidden units H.
    pub hidden: usize,
    /// Batch size B.
    pub batch: usize,
    /// H×I first-layer weights.
    pub w1: Vec<f64>,
    /// H first-layer biases.
    pub b1: Vec<f64>,
    /// H output weights.
    pub w2: Vec<f64>,
    /// The output bias.
    pub b2: f64,
    /// B×I inputs.
    pub x: Vec<f64>,
    /// B targets.
    pub y: Vec<f64>,
}

impl Mlp {
    /// The benchmark instance: 32 → 64 → 1, batch 256.
    pub fn standard() -> Mlp {
        Mlp::generate(32, 64, 256, DEFAULT_SEED)
    }

    /// Deterministic pseudo-random instance: weights uniform in ±1/√fan-in (a usual
    /// initialisation), biases in ±0.1, inputs standard normal, targets a smooth function of the
    /// inputs, `sin(sum_i x_i / √I)`.
    pub fn generate(inputs: usize, hidden: usize, batch: usize, seed: u64) -> Mlp {
        let mut rng = SplitMix64::new(seed);
        let w1_bound = 1.0 / (inputs as f64).sqrt();
        let w2_bound = 1.0 / (hidden as f64).sqrt();
        let w1 = (0..hidden * inputs).map(|_| rng.uniform_in(-w1_bound, w1_bound)).collect();
        let b1 = (0..hidden).map(|_| rng.uniform_in(-0.1, 0.1)).collect();
        let w2 = (0..hidden).map(|_| rng.uniform_in(-w2_bound, w2_bound)).collect();
        let b2 = rng.uniform_in(-0.1, 0.1);
        let x = rng.normals(batch * inputs);
        let y = x.chunks_exact(inputs).map(|s| (s.iter().sum::<f64>() * w1_bound).sin()).collect();
        Mlp { inputs, hidden, batch, w1, b1, w2, b2, x, y }
    }

    /// The reference loss of this instance ([`mlp_loss`]).
    pub fn loss(&self) -> f64 {
        mlp_loss(&self.w1, &self.b1, &self.w2, self.b2, &self.x, &self.y)
    }
}

impl Problem for Mlp {
    fn label(&self) -> String {
        format!("mlp {}-{}-1 batch={}", self.inputs, self.hidden, self.batch)
    }
    fn ir(&self) -> &'static str {
        MLP_IR
    }
    fn entry(&self) -> &'static str {
        ENTRY
    }
    /// w1, b1, w2 and b2.
    fn active_params(&self) -> &'static [usize] {
        &[0, 1, 2, 3]
    }
    fn args(&self) -> Vec<ArgValue> {
        vec![
            ArgValue::Slice(self.w1.clone()),
            ArgValue::Slice(self.b1.clone()),
            ArgValue::Slice(self.w2.clone()),
            ArgValue::Slice(vec![self.b2]),
            ArgValue::Slice(self.x.clone()),
            ArgValue::Slice(self.y.clone()),
        ]
    }
    fn reference(&self) -> f64 {
        self.loss()
    }
    fn hand_value_and_grad(&self, grad: &mut [f64]) -> Option<f64> {
        Some(mlp_gradient(&self.w1, &self.b1, &self.w2, self.b2, &self.x, &self.y, grad, &mut Vec::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_matches_a_direct_evaluation() {
        let m = Mlp::generate(3, 4, 5, 9);
        let mut sse = 0.0;
        for b in 0..m.batch {
            let mut out = m.b2;
            for h in 0..m.hidden {
                let z: f64 =
                    m.b1[h] + (0..m.inputs).map(|i| m.w1[h * m.inputs + i] * m.x[b * m.inputs + i]).sum::<f64>();
                out += m.w2[h] * z.tanh();
            }
            sse += (out - m.y[b]).powi(2);
        }
        assert!((m.loss() - sse / m.batch as f64).abs() < 1e-12);
        assert!(m.loss() > 0.0);
    }

    #[test]
    fn standard_sizes() {
        let m = Mlp::standard();
        assert_eq!((m.w1.len(), m.b1.len(), m.w2.len(), m.x.len(), m.y.len()), (64 * 32, 64, 64, 256 * 32, 256));
    }
}
