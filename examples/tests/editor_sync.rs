//! Runs the `editor_sync` example for a few seeds at its default sizes: it
//! exits non-zero when the replicas diverge, an event-built mirror differs
//! from its document, or the carets disagree.

use std::process::Command;

/// The seeds CI runs (each one takes a few tens of ms in debug).
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

#[test]
fn editor_sync_converges_for_several_seeds() {
    for seed in SEEDS {
        let output = Command::new(env!("CARGO_BIN_EXE_editor_sync"))
            .args(["--seed", &seed.to_string()])
            .output()
            .expect("the editor_sync binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "editor_sync --seed {seed} failed ({}):\n{stdout}\n{stderr}",
            output.status
        );
        assert_eq!(
            stdout.lines().last(),
            Some("ok"),
            "editor_sync --seed {seed} did not end with ok:\n{stdout}"
        );
    }
}

#[test]
fn editor_sync_refuses_bad_options() {
    let output = Command::new(env!("CARGO_BIN_EXE_editor_sync"))
        .args(["--drop", "150"])
        .output()
        .expect("the editor_sync binary runs");
    assert_eq!(output.status.code(), Some(2));
}
