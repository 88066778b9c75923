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
/// use jitdiff::problems::mlp::mlp_loss;
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
