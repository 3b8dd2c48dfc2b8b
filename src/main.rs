fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args().skip(1).map(Into::into).collect();
    let out = warpdrf::driver::with_big_stack(move || {
        let t0 = std::time::Instant::now();
        let mut db = warpdrf::source::SourceDb::new();
        let inputs = warpdrf::driver::collect_inputs(&paths).unwrap();
        let (entries, _diags) = warpdrf::driver::lower_all(&mut db, &inputs, &Default::default()).unwrap();
        let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
        let mut s = String::new();
        let (mut complete, mut warp, mut warp_complete) = (0, 0, 0);
        for e in &entries {
            let (line, _) = db.line_col(e.span);
            let w = e.kernel.uses_warp_primitives();
            if w { warp += 1; }
            if e.status() == warpdrf::driver::Status::Complete { complete += 1; if w { warp_complete += 1; } }
            s += &format!("{}:{} {} {:?} warp={} inst={} unknowns={}\n", db.name(e.span.file), line, e.name, e.status(), w, e.instantiations, e.unknowns().len());
            for u in e.unknowns() {
                let (l, _) = db.line_col(u.span);
                *reasons.entry(u.reason.clone()).or_default() += 1;
                if std::env::var("V").is_ok() { s += &format!("    {}:{} {}\n", db.name(u.span.file), l, u.reason); }
            }
        }
        s += &format!("{} kernels, {} complete, {} warp, {} warp complete, {:?}\n", entries.len(), complete, warp, warp_complete, t0.elapsed());
        for (r, n) in reasons { s += &format!("{n:5} {r}\n"); }
        s
    });
    print!("{out}");
}
