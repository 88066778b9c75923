// GradBench `ba`: bundle adjustment residuals. Camera c has 11 parameters (Rodrigues rotation
// 0..3, centre 3..6, focal length 6, principal point 7..9, radial distortion 9..11); point j has
// 3 coordinates; observation i sees point obs[2i + 1] from camera obs[2i] (indices stored as
// floats: the subset has only f64 slices) at feats[2i..2i + 2] with weight w[i]. `err` gets the
// 2p reprojection errors, then the p weight errors 1 - w².
fn ba(cams: &[f64], xs: &[f64], w: &[f64], obs: &[f64], feats: &[f64], err: &mut [f64]) {
    let p = w.len();
    for i in 0..p {
        let c = obs[2 * i] as usize * 11;
        let pt = obs[2 * i + 1] as usize * 3;
        let xo0 = xs[pt] - cams[c + 3];
        let xo1 = xs[pt + 1] - cams[c + 4];
        let xo2 = xs[pt + 2] - cams[c + 5];
        let (r0, r1, r2) = (cams[c], cams[c + 1], cams[c + 2]);
        let sqtheta = r0 * r0 + r1 * r1 + r2 * r2;
        let mut x0 = 0.0;
        let mut x1 = 0.0;
        let mut x2 = 0.0;
        if sqtheta != 0.0 {
            let theta = sqtheta.sqrt();
            let costheta = theta.cos();
            let sintheta = theta.sin();
            let theta_inverse = 1.0 / theta;
            let w0 = r0 * theta_inverse;
            let w1 = r1 * theta_inverse;
            let w2 = r2 * theta_inverse;
            let c0 = w1 * xo2 - w2 * xo1;
            let c1 = w2 * xo0 - w0 * xo2;
            let c2 = w0 * xo1 - w1 * xo0;
            let tmp = (w0 * xo0 + w1 * xo1 + w2 * xo2) * (1.0 - costheta);
            x0 = xo0 * costheta + c0 * sintheta + w0 * tmp;
            x1 = xo1 * costheta + c1 * sintheta + w1 * tmp;
            x2 = xo2 * costheta + c2 * sintheta + w2 * tmp;
        } else {
            x0 = xo0 + (r1 * xo2 - r2 * xo1);
            x1 = xo1 + (r2 * xo0 - r0 * xo2);
            x2 = xo2 + (r0 * xo1 - r1 * xo0);
        }
        let mut proj0 = x0 / x2;
        let mut proj1 = x1 / x2;
        let rsq = proj0 * proj0 + proj1 * proj1;
        let l = 1.0 + cams[c + 9] * rsq + cams[c + 10] * rsq * rsq;
        proj0 = proj0 * l;
        proj1 = proj1 * l;
        proj0 = proj0 * cams[c + 6] + cams[c + 7];
        proj1 = proj1 * cams[c + 6] + cams[c + 8];
        err[2 * i] = w[i] * (proj0 - feats[2 * i]);
        err[2 * i + 1] = w[i] * (proj1 - feats[2 * i + 1]);
    }
    for i in 0..p {
        err[2 * p + i] = 1.0 - w[i] * w[i];
    }
}
