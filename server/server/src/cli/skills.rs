//! `toolhost skills`: the skills the `skill` tool can load here (workspace and user folders).

use super::{Common, Failure, load_config, workspace_root};
use serde_json::{Value, json};
use std::io::Write;
use toolhost_contract::SkillCatalog;
use toolhost_host::skills::SkillDirs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Print `{skills: [{name, description, provider, path, modelInvocable}]}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<u8, Failure> {
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let catalog = SkillDirs::new(&[root], &config.skill_dirs);
    let skills = catalog.skills();
    let skipped = catalog.skipped();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let listed: Vec<Value> = skills
            .iter()
            .map(|s| {
                json!({
                    "name": s.name, "description": s.description, "provider": s.provider,
                    "path": s.path, "modelInvocable": s.model_invocable,
                })
            })
            .collect();
        let skipped: Vec<Value> =
            skipped.iter().map(|s| json!({"path": s.path, "why": s.why})).collect();
        let _ = writeln!(stdout, "{}", json!({ "skills": listed, "skipped": skipped }));
        return Ok(0);
    }
    // What was left out goes to stderr, so a person sees why a skill is missing.
    for s in &skipped {
        eprintln!("toolhost: {}: {}", s.path, s.why);
    }
    if skills.is_empty() {
        let _ = writeln!(
            stdout,
            "no skills: add <name>/SKILL.md under .toolhost/skills/, .claude/skills/ or \
             .agents/skills/ (or ~/.config/toolhost/skills/)"
        );
    } else {
        for skill in skills {
            let manual = if skill.model_invocable { "" } else { " (user only)" };
            let _ = writeln!(
                stdout,
                "{:<20} {}{manual}\n{:<20} {}",
                skill.name, skill.description, "", skill.path
            );
        }
    }
    Ok(0)
}
