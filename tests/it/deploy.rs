//! The container image: the Dockerfile ships the binary the package builds as the image the
//! Kubernetes manifests in deploy/ run, and builds where a container builder is at hand.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Test, ensure, text, trials_of};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 1] = [("dockerfile_builds_the_image_deploy_names", dockerfile)];
    trials_of(env, "deploy", tests)
}

/// The Dockerfile builds the image the Kubernetes manifests run (dbduel:latest) and copies the
/// binary the package builds; with a container builder here (docker, podman or buildah), it is
/// built and `dbduel --version` run in it; without one, that step is skipped and said so.
fn dockerfile(_: &Env) -> Result<(), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::read_to_string(root.join("Dockerfile")).map_err(|e| e.to_string())?;
    ensure(
        file.contains("target/release/dbduel") && file.contains("ENTRYPOINT [\"dbduel\"]"),
        || "the Dockerfile does not ship the dbduel binary as its entry point".into(),
    )?;
    for manifest in ["run-job.yaml", "merge-job.yaml"] {
        let text = std::fs::read_to_string(root.join("deploy/kubernetes").join(manifest))
            .map_err(|e| e.to_string())?;
        ensure(text.contains("image: dbduel:latest"), || {
            format!("{manifest} names another image than the Dockerfile's dbduel:latest")
        })?;
    }
    let builder = ["docker", "podman", "buildah"].into_iter().find(|b| {
        std::process::Command::new(b)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(builder) = builder else {
        eprintln!(
            "note: no container builder (docker, podman, buildah) here: the image is not built"
        );
        return Ok(());
    };
    let build = if builder == "buildah" { "bud" } else { "build" };
    let built = std::process::Command::new(builder)
        .args([build, "-t", "dbduel:test", "."])
        .current_dir(root)
        .output()
        .map_err(|e| e.to_string())?;
    ensure(built.status.success(), || {
        format!("{builder} {build}: {}", text(&built))
    })?;
    let ran = std::process::Command::new(builder)
        .args(["run", "--rm", "dbduel:test", "--version"])
        .output()
        .map_err(|e| e.to_string())?;
    ensure(
        String::from_utf8_lossy(&ran.stdout).starts_with("dbduel "),
        || format!("the image does not run dbduel: {}", text(&ran)),
    )
}
