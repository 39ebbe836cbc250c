//! Skill discovery (docs/tools.md, "skill"): skills folders holding `<folder>/SKILL.md` bundles
//! and flat `<file>.md` skills beside them (each folder's entries in name order), in the workspace
//! (`.toolhost/skills/`, and the layouts other agents use, `.claude/skills/` and
//! `.agents/skills/`), in folders `[skills] dirs` names, and in the user's config folder
//! (`~/.config/toolhost/skills/`, `~/.claude/skills/`, `~/.agents/skills/`). A skill's name is
//! its front matter's, and a file without a name and a description there is skipped (the rules
//! are `toolhost_tools_interact::skill::parse_skill_file`'s). The first place defining a name
//! wins. The catalog is read afresh on every look-up, so a skill added while the session runs
//! is found.
//!
//! A folder inside the workspace holds what the repository put there, whoever named it: its
//! skills must stay inside the workspace. A skills folder, skill folder or `SKILL.md` there
//! that resolves (through a symlink) outside the workspace is skipped with a warning, so a
//! cloned repository cannot hand the model a file of the user's as instructions.

use std::path::{Path, PathBuf};
use toolhost_contract::{LoadedSkill, ResourceBase, SkillCatalog, SkillEntry};
use toolhost_tools_interact::skill::parse_skill_file;

/// The largest `SKILL.md` read (instructions, not data).
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// Where a session's skills are found, in order of precedence.
#[derive(Clone, Debug)]
pub struct SkillDirs {
    dirs: Vec<SkillDir>,
}

/// One folder of skills.
#[derive(Clone, Debug)]
struct SkillDir {
    path: PathBuf,
    provider: &'static str,
    /// The workspace root (canonical) this folder is inside: what it finds must resolve
    /// beneath it.
    confined_to: Option<PathBuf>,
}

impl SkillDirs {
    /// The folders for the workspace at `root` (its roots in order), `extra` from the
    /// configuration, then the user's.
    pub fn new(roots: &[PathBuf], extra: &[PathBuf]) -> Self {
        let roots: Vec<(PathBuf, PathBuf)> = roots
            .iter()
            .map(|root| (root.clone(), root.canonicalize().unwrap_or_else(|_| root.clone())))
            .collect();
        // The root a folder is inside, as named or as resolved.
        let inside = |dir: &Path| {
            let resolved = dir.canonicalize().ok();
            roots.iter().find_map(|(root, canonical)| {
                let within = dir.starts_with(root)
                    || dir.starts_with(canonical)
                    || resolved.as_ref().is_some_and(|r| r.starts_with(canonical));
                within.then(|| canonical.clone())
            })
        };
        let mut dirs = Vec::new();
        for (root, canonical) in &roots {
            for layout in [".toolhost/skills", ".claude/skills", ".agents/skills"] {
                let path = root.join(layout);
                dirs.push(SkillDir {
                    path,
                    provider: "workspace",
                    confined_to: Some(canonical.clone()),
                });
            }
        }
        for dir in extra {
            dirs.push(SkillDir { path: dir.clone(), provider: "config", confined_to: inside(dir) });
        }
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
        let mut user = Vec::new();
        if let Some(config) = config_home {
            user.push(config.join("toolhost/skills"));
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            user.push(home.join(".claude/skills"));
            user.push(home.join(".agents/skills"));
        }
        for path in user {
            // The user's own folders, unless the workspace is where they are.
            let confined_to = inside(&path);
            dirs.push(SkillDir { path, provider: "user", confined_to });
        }
        SkillDirs { dirs }
    }

    fn scan(&self) -> Vec<Found> {
        self.scan_noting(&mut Vec::new())
    }

    /// What discovery left out and why (a folder or skill leading outside the workspace, front
    /// matter that does not parse): the log has each as a warning, `toolhost skills` shows them.
    pub fn skipped(&self) -> Vec<SkippedSkill> {
        let mut skipped = Vec::new();
        self.scan_noting(&mut skipped);
        skipped
    }

    fn scan_noting(&self, skipped: &mut Vec<SkippedSkill>) -> Vec<Found> {
        let mut skip = |path: &Path, why: String| {
            tracing::warn!(path = %path.display(), "{why}");
            skipped.push(SkippedSkill { path: path.display().to_string(), why });
        };
        let mut found: Vec<Found> = Vec::new();
        for SkillDir { path: dir, provider, confined_to } in &self.dirs {
            if dir.symlink_metadata().is_err() {
                continue;
            }
            if let Some(root) = confined_to
                && leaves(dir, root)
            {
                skip(dir, "skills folder skipped: it leads outside the workspace".to_owned());
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut names: Vec<(Vec<(u8, char)>, String)> = entries
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .map(|name| (collation_key(&name), name))
                .collect();
            names.sort();
            for (_, name) in names {
                let entry = dir.join(&name);
                // A folder holds `SKILL.md` and its resources; a flat `*.md` beside the folders
                // is a skill of its own whose resources are the skills folder's.
                let (file, base) = if entry.is_dir() {
                    (entry.join("SKILL.md"), entry.clone())
                } else if name.ends_with(".md") && entry.is_file() {
                    (entry.clone(), dir.clone())
                } else {
                    continue;
                };
                if let Some(root) = confined_to
                    && let Some(outside) = [&entry, &file].into_iter().find(|p| leaves(p, root))
                {
                    skip(
                        outside,
                        "skill skipped: it is a symlink leading outside the workspace".into(),
                    );
                    continue;
                }
                let Some(text) = read_bounded(&file) else { continue };
                let parsed = match parse_skill_file(&text) {
                    Ok(parsed) => parsed,
                    Err(why) => {
                        skip(&file, format!("skill skipped: {why}"));
                        continue;
                    }
                };
                // The first place defining a name wins, whoever may invoke it.
                if found.iter().any(|f| f.entry.name == parsed.name) {
                    continue;
                }
                let entry = SkillEntry {
                    name: parsed.name,
                    description: parsed.description,
                    provider: (*provider).to_owned(),
                    path: file.display().to_string(),
                    model_invocable: parsed.model_invocable,
                };
                found.push(Found { entry, base, user_invocable: parsed.user_invocable });
            }
        }
        found.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
        found
    }

    /// The skills a person may invoke (`user-invocable` not turned off): what front ends offer
    /// as prompts or commands.
    pub fn user_skills(&self) -> Vec<SkillEntry> {
        self.scan().into_iter().filter(|f| f.user_invocable).map(|f| f.entry).collect()
    }
}

/// A skill or skills folder discovery left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedSkill {
    pub path: String,
    /// What the log says, e.g. `skill skipped: it is a symlink leading outside the workspace`.
    pub why: String,
}

/// A skill discovery kept.
struct Found {
    entry: SkillEntry,
    /// Where its resources are: its folder, or the skills folder of a flat file.
    base: PathBuf,
    user_invocable: bool,
}

/// The order the reference lists a skills folder in (a locale-aware comparison): punctuation
/// before digits before letters, letters compared without case first, lowercase before
/// uppercase only to break a tie.
fn collation_key(name: &str) -> Vec<(u8, char)> {
    const PUNCTUATION: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
    let primary = name.chars().map(|c| match PUNCTUATION.find(c) {
        Some(at) => (1, char::from_u32(at as u32).unwrap_or(c)),
        None if c.is_whitespace() => (0, c),
        None if c.is_ascii_digit() => (2, c),
        None if c.is_alphabetic() => (3, c.to_lowercase().next().unwrap_or(c)),
        None => (4, c),
    });
    // Then the case of each letter: lowercase first.
    let tertiary = name.chars().map(|c| (5, if c.is_uppercase() { '1' } else { '0' }));
    primary.chain(std::iter::once((0, '\0'))).chain(tertiary).collect()
}

/// Whether `path` exists and resolves outside `root` (canonical); a path that does not exist
/// leads nowhere.
fn leaves(path: &Path, root: &Path) -> bool {
    path.symlink_metadata().is_ok()
        && path.canonicalize().map_or(true, |resolved| !resolved.starts_with(root))
}

fn read_bounded(path: &Path) -> Option<String> {
    // Type checked on the open handle: a FIFO swapped in cannot block the listing.
    toolhost_contract::regular_file::read_regular_text(path, MAX_SKILL_BYTES).ok()
}

impl SkillDirs {
    /// Skill `name` as the `skill` tool gives it to the model (its `<skill_content>` envelope),
    /// for front ends that offer skills as prompts (MCP `prompts/get`).
    /// A skill whose front matter says `user-invocable: false` is not offered.
    pub fn prompt(&self, name: &str) -> Result<Option<String>, String> {
        if !self.user_skills().iter().any(|s| s.name == name) {
            return Ok(None);
        }
        let Some(skill) = self.load(name)? else { return Ok(None) };
        Ok(Some(toolhost_tools_interact::skill::envelope(
            &skill.entry.name,
            &skill.entry.provider,
            skill.resource_base.as_ref(),
            &skill.content,
        )))
    }
}

impl SkillCatalog for SkillDirs {
    fn skills(&self) -> Vec<SkillEntry> {
        self.scan().into_iter().map(|found| found.entry).collect()
    }

    fn load(&self, name: &str) -> Result<Option<LoadedSkill>, String> {
        let Some(Found { entry, base, .. }) =
            self.scan().into_iter().find(|f| f.entry.name == name)
        else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(&entry.path)
            .map_err(|e| format!("cannot read skill \"{name}\" ({}): {e}", entry.path))?;
        // Changed since the listing so that it no longer reads as this skill: gone.
        let Ok(parsed) = parse_skill_file(&text) else { return Ok(None) };
        if parsed.name != entry.name {
            return Ok(None);
        }
        let resource_base = Some(ResourceBase::Directory { path: base.display().to_string() });
        Ok(Some(LoadedSkill { entry, content: parsed.body, resource_base }))
    }
}

/// `[skills]` as one source gives it: `dirs`, more folders to find skills in (relative to the
/// workspace).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsSection {
    dirs: Option<Vec<PathBuf>>,
}

impl toolhost_contract::config::Section for SkillsSection {
    type Settings = Vec<PathBuf>;

    fn apply(self, dirs: &mut Vec<PathBuf>, layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(configured) = self.dirs {
            *dirs = configured.into_iter().map(|d| layer.resolve(d)).collect();
        }
    }

    /// Folders outside the workspace (absolute, or climbing out with `..`) would hand the
    /// model files of the user's as instructions: dropped. Folders inside stay, and discovery
    /// keeps what they find inside the workspace too (symlinks leaving it are skipped).
    fn restrict_untrusted(&mut self, _applied: &Vec<PathBuf>) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        dropped.unless("skills.dirs", &mut self.dirs, |dirs| {
            dirs.iter().all(|dir| {
                dir.components().all(|c| {
                    matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir)
                })
            })
        });
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use toolhost_contract::config::Section;

    fn skill(folder: &Path, name: &str) {
        std::fs::create_dir_all(folder).unwrap();
        let text = format!("---\nname: {name}\ndescription: d\n---\nbody\n");
        std::fs::write(folder.join("SKILL.md"), text).unwrap();
    }

    fn names(dirs: &SkillDirs) -> Vec<String> {
        dirs.skills().into_iter().map(|s| s.name).filter(|n| n.starts_with("t-")).collect()
    }

    #[test]
    fn skills_symlinked_from_outside_the_workspace_are_skipped() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = ws.path();
        skill(&root.join(".toolhost/skills/good"), "t-good");
        // Inside to inside is fine.
        skill(&root.join("docs/shared"), "t-shared");
        symlink(root.join("docs/shared"), root.join(".toolhost/skills/shared")).unwrap();
        // A skill folder, a SKILL.md and a whole skills folder leading outside.
        skill(&outside.path().join("folder"), "t-folder");
        symlink(outside.path().join("folder"), root.join(".toolhost/skills/folder")).unwrap();
        skill(&outside.path().join("file"), "t-file");
        std::fs::create_dir_all(root.join(".claude/skills/file")).unwrap();
        symlink(outside.path().join("file/SKILL.md"), root.join(".claude/skills/file/SKILL.md"))
            .unwrap();
        skill(&outside.path().join("all/whole"), "t-whole");
        std::fs::create_dir_all(root.join(".agents")).unwrap();
        symlink(outside.path().join("all"), root.join(".agents/skills")).unwrap();
        let dirs = SkillDirs::new(&[root.to_path_buf()], &[]);
        assert_eq!(names(&dirs), ["t-good", "t-shared"]);
        assert!(dirs.load("t-folder").unwrap().is_none());
        assert!(dirs.load("t-good").unwrap().is_some());
    }

    #[test]
    fn flat_files_beside_bundles_and_front_matter_names() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        let skills = root.join(".toolhost/skills");
        // The folder's name is not the skill's: the front matter's is.
        skill(&skills.join("folder"), "t-bundle");
        std::fs::write(skills.join("t-flat.md"), "---\nname: t-flat\ndescription: d\n---\nflat\n")
            .unwrap();
        // Not skills: no description, no front matter, not markdown, a user-only hidden one.
        std::fs::write(skills.join("nodesc.md"), "---\nname: t-nodesc\n---\nx\n").unwrap();
        std::fs::write(skills.join("plain.md"), "# t-plain\n").unwrap();
        std::fs::write(skills.join("t-text.txt"), "---\nname: t-text\ndescription: d\n---\n")
            .unwrap();
        std::fs::write(
            skills.join("t-model.md"),
            "---\nname: t-model\ndescription: d\nuser-invocable: false\n---\nm\n",
        )
        .unwrap();
        let dirs = SkillDirs::new(&[root.to_path_buf()], &[]);
        assert_eq!(names(&dirs), ["t-bundle", "t-flat", "t-model"]);
        let flat = dirs.load("t-flat").unwrap().unwrap();
        assert_eq!(flat.content, "flat");
        assert_eq!(
            flat.resource_base,
            Some(ResourceBase::Directory { path: skills.display().to_string() })
        );
        let bundle = dirs.load("t-bundle").unwrap().unwrap();
        assert_eq!(
            bundle.resource_base,
            Some(ResourceBase::Directory { path: skills.join("folder").display().to_string() })
        );
        let users: Vec<String> = dirs.user_skills().into_iter().map(|s| s.name).collect();
        assert!(!users.contains(&"t-model".to_owned()));
        assert!(users.contains(&"t-flat".to_owned()));
        assert_eq!(dirs.prompt("t-model").unwrap(), None);
    }

    #[test]
    fn within_a_folder_the_first_entry_in_name_order_wins() {
        let ws = tempfile::tempdir().unwrap();
        let skills = ws.path().join(".toolhost/skills");
        std::fs::create_dir_all(&skills).unwrap();
        for (file, body) in [("b.md", "from b"), ("A.md", "from A"), ("a-z.md", "from a-z")] {
            let text = format!("---\nname: t-same\ndescription: d\n---\n{body}\n");
            std::fs::write(skills.join(file), text).unwrap();
        }
        let dirs = SkillDirs::new(&[ws.path().to_path_buf()], &[]);
        assert_eq!(dirs.load("t-same").unwrap().unwrap().content, "from a-z");
        let mut keys = vec!["b", "B", "a.md", "a-b", "a_b", "a1", "ab", "A"];
        keys.sort_by_key(|k| collation_key(k));
        assert_eq!(keys, ["A", "a_b", "a-b", "a.md", "a1", "ab", "b", "B"]);
    }

    #[test]
    fn a_configured_folder_inside_the_workspace_is_held_to_it() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = ws.path();
        skill(&outside.path().join("x"), "t-outside");
        symlink(outside.path(), root.join("linked")).unwrap();
        let inside = SkillDirs::new(&[root.to_path_buf()], &[root.join("linked")]);
        assert!(names(&inside).is_empty());
        // The user naming the folder outside directly is the user's choice.
        let user = SkillDirs::new(&[root.to_path_buf()], &[outside.path().to_path_buf()]);
        assert_eq!(names(&user), ["t-outside"]);
    }

    #[test]
    fn an_untrusted_source_names_skill_folders_only_inside_the_workspace() {
        for dirs in [vec!["/home/u/.ssh"], vec!["../elsewhere"], vec!["ok", "a/../../b"]] {
            let mut section =
                SkillsSection { dirs: Some(dirs.iter().map(PathBuf::from).collect()) };
            assert_eq!(section.restrict_untrusted(&Vec::new()), ["skills.dirs"], "{dirs:?}");
            assert_eq!(section.dirs, None);
        }
        let mut section = SkillsSection { dirs: Some(vec!["tools/skills".into()]) };
        assert!(section.restrict_untrusted(&Vec::new()).is_empty());
        assert_eq!(section.dirs, Some(vec![PathBuf::from("tools/skills")]));
    }
}
