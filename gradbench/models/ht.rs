// GradBench `ht`: ADBench's hand tracking residuals, in the operation order of GradBench's
// reference. B bones, V vertices, P points. Flat layouts: `base_rel`, `inv_base_abs` B x 16
// (4 x 4 row-major), `base_pos` V x 4, `weights` V x B, `triangles` T x 3, `points` P x 3;
// integer data (`parents`, -1 for the root, `triangles`, `corr`) as floats, read back with
// `as`. `us` (2P barycentric coordinates) is empty for the "simple" variant. `err` (3P) gets
// the residuals; `pp` (3 (B + 3)), `rel`, `abs`, `tr` (16 B) and `pos` (3 V) are work space.
fn ht(
    theta: &[f64],
    us: &[f64],
    parents: &[f64],
    base_rel: &[f64],
    inv_base_abs: &[f64],
    base_pos: &[f64],
    weights: &[f64],
    triangles: &[f64],
    corr: &[f64],
    points: &[f64],
    mirrored: bool,
    err: &mut [f64],
    pp: &mut [f64],
    rel: &mut [f64],
    abs: &mut [f64],
    tr: &mut [f64],
    pos: &mut [f64],
) {
    let b = parents.len();
    let v = base_pos.len() / 4;
    // Pose parameters, column k at pp[3k..3k + 3]: global rotation, scale 1, translation, then
    // per bone (x, z, y) Euler angles.
    for i in 0..3 * (b + 3) {
        pp[i] = 0.0;
    }
    for i in 0..3 {
        pp[i] = theta[i];
        pp[3 + i] = 1.0;
        pp[6 + i] = theta[3 + i];
    }
    let mut i_theta = 6;
    let mut i_pose = 5;
    for _finger in 0..5 {
        for i in 2..5 {
            pp[3 * i_pose] = theta[i_theta];
            i_theta += 1;
            if i == 2 {
                pp[3 * i_pose + 1] = theta[i_theta];
                i_theta += 1;
            }
            i_pose += 1;
        }
        i_pose += 1;
    }

    // Posed relatives: base_rel[i] * [R 0; 0 1], R = Rz Ry Rx of the bone's angles.
    for bone in 0..b {
        let col = 3 * (bone + 3);
        let (tx, ty, tz) = (pp[col], pp[col + 2], pp[col + 1]);
        let (cx, sx) = (tx.cos(), tx.sin());
        let (cy, sy) = (ty.cos(), ty.sin());
        let (cz, sz) = (tz.cos(), tz.sin());
        // Rz Ry, then times Rx.
        let zy = [cz * cy, -sz, cz * sy, sz * cy, cz, sz * sy, -sy, 0.0, cy];
        let r = [
            zy[0],
            zy[1] * cx + zy[2] * sx,
            -zy[1] * sx + zy[2] * cx,
            zy[3],
            zy[4] * cx + zy[5] * sx,
            -zy[4] * sx + zy[5] * cx,
            zy[6],
            zy[7] * cx + zy[8] * sx,
            -zy[7] * sx + zy[8] * cx,
        ];
        let o = 16 * bone;
        for row in 0..4 {
            for c in 0..3 {
                let mut s = 0.0;
                for k in 0..3 {
                    s += base_rel[o + 4 * row + k] * r[3 * k + c];
                }
                rel[o + 4 * row + c] = s;
            }
            rel[o + 4 * row + 3] = base_rel[o + 4 * row + 3];
        }
    }

    // Absolutes along the bone tree (parents come first), then transforms.
    for bone in 0..b {
        let o = 16 * bone;
        let parent = parents[bone] as i64;
        if parent < 0 {
            for k in 0..16 {
                abs[o + k] = rel[o + k];
            }
        } else {
            let po = 16 * parent as usize;
            for row in 0..4 {
                for c in 0..4 {
                    let mut s = 0.0;
                    for k in 0..4 {
                        s += abs[po + 4 * row + k] * rel[o + 4 * k + c];
                    }
                    abs[o + 4 * row + c] = s;
                }
            }
        }
        for row in 0..4 {
            for c in 0..4 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += abs[o + 4 * row + k] * inv_base_abs[o + 4 * k + c];
                }
                tr[o + 4 * row + c] = s;
            }
        }
    }

    // Linear blend skinning.
    for i in 0..3 * v {
        pos[i] = 0.0;
    }
    for bone in 0..b {
        let o = 16 * bone;
        for vert in 0..v {
            let w = weights[vert * b + bone];
            for i in 0..3 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += tr[o + 4 * i + k] * base_pos[vert * 4 + k];
                }
                pos[3 * vert + i] += s * w;
            }
        }
    }
    if mirrored {
        for vert in 0..v {
            pos[3 * vert] = -pos[3 * vert];
        }
    }

    // The global transform: rotation by the angle-axis theta[0..3], then translation.
    let (a0, a1, a2) = (pp[0], pp[1], pp[2]);
    let norm = (a0 * a0 + a1 * a1 + a2 * a2).sqrt();
    let mut g = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    if norm >= 0.0001 {
        let (x, y, z) = (a0 / norm, a1 / norm, a2 / norm);
        let (s, c) = (norm.sin(), norm.cos());
        g[0] = x * x + (1.0 - x * x) * c;
        g[1] = x * y * (1.0 - c) - z * s;
        g[2] = x * z * (1.0 - c) + y * s;
        g[3] = x * y * (1.0 - c) + z * s;
        g[4] = y * y + (1.0 - y * y) * c;
        g[5] = y * z * (1.0 - c) - x * s;
        g[6] = x * z * (1.0 - c) - y * s;
        g[7] = z * y * (1.0 - c) + x * s;
        g[8] = z * z + (1.0 - z * z) * c;
    }
    for c in 0..3 {
        for r in 0..3 {
            g[3 * r + c] = g[3 * r + c] * pp[3 + c];
        }
    }
    for vert in 0..v {
        let (p0, p1, p2) = (pos[3 * vert], pos[3 * vert + 1], pos[3 * vert + 2]);
        for i in 0..3 {
            pos[3 * vert + i] = g[3 * i] * p0 + g[3 * i + 1] * p1 + g[3 * i + 2] * p2 + pp[6 + i];
        }
    }

    // Residuals: points minus the corresponding vertex, or the point of its triangle.
    let npts = corr.len();
    for i in 0..npts {
        let c = corr[i] as usize;
        if us.is_empty() {
            for j in 0..3 {
                err[3 * i + j] = points[3 * i + j] - pos[3 * c + j];
            }
        } else {
            let v0 = triangles[3 * c] as usize;
            let v1 = triangles[3 * c + 1] as usize;
            let v2 = triangles[3 * c + 2] as usize;
            let (u0, u1) = (us[2 * i], us[2 * i + 1]);
            for j in 0..3 {
                let hand = u0 * pos[3 * v0 + j] + u1 * pos[3 * v1 + j] + (1.0 - u0 - u1) * pos[3 * v2 + j];
                err[3 * i + j] = points[3 * i + j] - hand;
            }
        }
    }
}
