//! Skills: folders holding a `SKILL.md` (front matter `name` and
//! `description`, body = instructions; every other file is a resource),
//! in the layout Claude Code documents. Found in `.cairn/skills/`,
//! `.claude/skills/` and `.agents/skills/` of every directory from the
//! working directory up to the project root, then in the user's
//! `~/.config/cairn/skills/` and `~/.claude/skills/`. The nearest skill of a
//! name wins, so a project can override a personal one.
//!
//! Discovery reads only the front matter's two fields and is redone on every
//! request (like instruction files), so a skill added mid-session is seen.

use std::path::{Path, PathBuf};

use crate::frontmatter::FrontMatter;

/// Where skills live inside a project directory, in priority order.
pub const PROJECT_SKILL_DIRS: [&str; 3] = [".cairn/skills", ".claude/skills", ".agents/skills"];
/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Resource files listed for a loaded skill, at most (a skill folder holding
/// a whole project must not flood the context).
const MAX_RESOURCES: usize = 100;

/// One discovered skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
}

/// Where to look: the facts discovery needs, nothing more.
#[derive(Debug, Clone)]
pub struct SkillRoots {
    pub cwd: PathBuf,
    pub root: PathBuf,
    pub home: Option<PathBuf>,
    /// cairn's config dir (`~/.config/cairn`).
    pub config_dir: Option<PathBuf>,
}

impl SkillRoots {
    /// The skill folders' parents, nearest first.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .cwd
            .ancestors()
            .take_while(|dir| dir.starts_with(&self.root))
            .flat_map(|dir| PROJECT_SKILL_DIRS.iter().map(move |sub| dir.join(sub)))
            .collect();
        dirs.extend(self.config_dir.iter().map(|dir| dir.join("skills")));
        dirs.extend(self.home.iter().map(|home| home.join(".claude/skills")));
        dirs
    }
}

/// What discovery found, and the skill files it could not use (with why),
/// for the user to see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovered {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

impl Discovered {
    pub fn find(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }
}

/// Every skill under `roots`, sorted by name; the nearest of a name wins.
pub fn discover(roots: &SkillRoots) -> Discovered {
    let mut found = Discovered::default();
    for parent in roots.dirs() {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
        folders.sort();
        for folder in folders {
            let file = folder.join(SKILL_FILE);
            if !file.is_file() {
                continue;
            }
            // A repository's skill read through a link out of it would put
            // the user's files in the prompt (issue #28): never read.
            if parent.starts_with(&roots.root)
                && let Some(real) = crate::shared::linked_outside(&file, &roots.root)
            {
                found.problems.push(format!(
                    "skill {} links outside the project (to {}): not read",
                    file.display(),
                    real.display()
                ));
                continue;
            }
            match read_skill(&folder, &file) {
                Ok(skill) if found.find(&skill.name).is_none() => found.skills.push(skill),
                Ok(_) => {}
                Err(problem) => found.problems.push(problem),
            }
        }
    }
    found.skills.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// Reads one `SKILL.md`'s name and description. The name defaults to the
/// folder's name, as Claude Code's does; the description is required, since
/// the model picks a skill by it.
fn read_skill(folder: &Path, file: &Path) -> Result<Skill, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| format!("skill {}: cannot read: {error}", file.display()))?;
    let front =
        FrontMatter::parse(&text).map_err(|error| format!("skill {}: {error}", file.display()))?;
    let folder_name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = front
        .string("name")
        .filter(|name| !name.is_empty())
        .unwrap_or(folder_name);
    let description = front
        .string("description")
        .filter(|text| !text.is_empty())
        .ok_or_else(|| {
            format!(
                "skill {}: no `description` in its front matter; the model chooses skills by it",
                file.display()
            )
        })?;
    Ok(Skill {
        name,
        description,
        dir: folder.to_path_buf(),
    })
}

/// A loaded skill: its instructions and the files that come with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub body: String,
    /// Resource files, relative to the skill's folder, sorted.
    pub files: Vec<String>,
    /// More files than [`MAX_RESOURCES`] were there.
    pub more_files: bool,
}

/// Reads `skill`'s body and lists its other files (hidden ones skipped).
pub fn load(skill: &Skill) -> std::io::Result<Loaded> {
    let text = std::fs::read_to_string(skill.dir.join(SKILL_FILE))?;
    let body = match FrontMatter::parse(&text) {
        Ok(front) => front.body,
        Err(_) => text,
    };
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(&skill.dir)
        .standard_filters(false)
        .hidden(true)
        .max_depth(Some(4))
        .build();
    for entry in walker.flatten() {
        let is_file = entry.file_type().is_some_and(|kind| kind.is_file());
        let Ok(rel) = entry.path().strip_prefix(&skill.dir) else {
            continue;
        };
        if is_file && rel != Path::new(SKILL_FILE) {
            files.push(rel.display().to_string());
        }
    }
    files.sort();
    let more_files = files.len() > MAX_RESOURCES;
    files.truncate(MAX_RESOURCES);
    Ok(Loaded {
        body,
        files,
        more_files,
    })
}

/// A skill's description in the list at most (the Agent Skills format's own
/// limit): a 19.6 KB description must not ride along on every request.
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;

/// The whole list's descriptions at most; skills past it are named only.
pub const MAX_LIST_CHARS: usize = 12_000;

/// How each skill appears in the list of [`prompt_block`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listed {
    Whole,
    /// Its description cut at [`MAX_DESCRIPTION_CHARS`].
    Cut,
    /// Named without its description: the list was full.
    NameOnly,
}

/// The list's plan: each skill with how it appears and, unless named only,
/// its entry's text. Once the entries hold [`MAX_LIST_CHARS`], the rest are
/// named only.
fn plan(skills: &[Skill]) -> Vec<(&Skill, Listed, String)> {
    let mut size = 0;
    skills
        .iter()
        .map(|skill| {
            if size > MAX_LIST_CHARS {
                return (skill, Listed::NameOnly, String::new());
            }
            let description = cut(&skill.description, MAX_DESCRIPTION_CHARS);
            let listed = match description {
                std::borrow::Cow::Borrowed(_) => Listed::Whole,
                std::borrow::Cow::Owned(_) => Listed::Cut,
            };
            let entry = format!(
                "\n  <skill>\n    <name>{}</name>\n    <description>{description}</description>\n  </skill>",
                skill.name
            );
            size += entry.len();
            (skill, listed, entry)
        })
        .collect()
}

/// The system prompt's list of skills, or `None` when there are none.
/// Descriptions are cut at [`MAX_DESCRIPTION_CHARS`]; once the list holds
/// [`MAX_LIST_CHARS`], the remaining skills are named without descriptions.
pub fn prompt_block(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut block = String::from(
        "Skills provide specialized instructions for particular tasks. When a task matches a \
         skill's description, call the `skill` tool with its name before starting, then follow \
         the instructions it returns.\n<available_skills>",
    );
    let mut unlisted = Vec::new();
    for (skill, listed, entry) in plan(skills) {
        match listed {
            Listed::NameOnly => unlisted.push(skill.name.as_str()),
            Listed::Whole | Listed::Cut => block.push_str(&entry),
        }
    }
    if !unlisted.is_empty() {
        block.push_str(&format!(
            "\n  <more>Also available, descriptions left out for room: {}</more>",
            unlisted.join(", ")
        ));
    }
    block.push_str("\n</available_skills>");
    Some(block)
}

/// What [`prompt_block`] left out, for `/context`: `None` when every skill
/// is listed whole.
pub fn cut_note(skills: &[Skill]) -> Option<String> {
    let plan = plan(skills);
    let names = |wanted: Listed| -> Vec<&str> {
        plan.iter()
            .filter(|(_, listed, _)| *listed == wanted)
            .map(|(skill, _, _)| skill.name.as_str())
            .collect()
    };
    let (cut, name_only) = (names(Listed::Cut), names(Listed::NameOnly));
    let mut parts = Vec::new();
    if !cut.is_empty() {
        parts.push(format!(
            "description cut at {MAX_DESCRIPTION_CHARS} characters: {}",
            cut.join(", ")
        ));
    }
    if !name_only.is_empty() {
        parts.push(format!(
            "named without description (the list holds about {MAX_LIST_CHARS} characters): {}",
            name_only.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| format!("{} skills; {}", skills.len(), parts.join("; ")))
}

/// `text`'s first `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]).into(),
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn roots(dir: &Path) -> SkillRoots {
        SkillRoots {
            cwd: dir.join("repo/sub"),
            root: dir.join("repo"),
            home: Some(dir.join("home")),
            config_dir: Some(dir.join("home/.config/cairn")),
        }
    }

    #[test]
    fn nearest_skill_of_a_name_wins_and_all_places_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let skill = |name: &str, desc: &str| {
            format!("---\nname: {name}\ndescription: {desc}\n---\nBody of {desc}\n")
        };
        write(
            &d.join("repo/sub/.claude/skills/pdf/SKILL.md"),
            &skill("pdf", "near pdf"),
        );
        write(
            &d.join("repo/.agents/skills/pdf/SKILL.md"),
            &skill("pdf", "far pdf"),
        );
        write(
            &d.join("repo/.cairn/skills/x/SKILL.md"),
            &skill("lint", "lint it"),
        );
        write(
            &d.join("home/.claude/skills/home/SKILL.md"),
            &skill("home", "from home"),
        );
        write(
            &d.join("home/.config/cairn/skills/c/SKILL.md"),
            &skill("cfg", "from config"),
        );
        // Above the project root: not read.
        write(
            &d.join(".claude/skills/outside/SKILL.md"),
            &skill("outside", "no"),
        );
        let found = discover(&roots(d));
        let names: Vec<(&str, &str)> = found
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("cfg", "from config"),
                ("home", "from home"),
                ("lint", "lint it"),
                ("pdf", "near pdf")
            ]
        );
        assert!(found.problems.is_empty(), "{:?}", found.problems);
    }

    #[test]
    fn a_skill_without_description_or_with_broken_yaml_is_a_problem_not_a_crash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        write(
            &d.join("repo/.claude/skills/a/SKILL.md"),
            "---\nname: a\n---\nbody",
        );
        write(
            &d.join("repo/.claude/skills/b/SKILL.md"),
            "---\nname: [b\n---\nbody",
        );
        write(
            &d.join("repo/.claude/skills/c/SKILL.md"),
            "---\ndescription: folder named\n---\nC body",
        );
        let found = discover(&roots(d));
        assert_eq!(found.skills.len(), 1);
        assert_eq!(found.skills[0].name, "c", "name defaults to the folder");
        assert_eq!(found.problems.len(), 2, "{:?}", found.problems);
        assert!(found.problems[0].contains("description"));
    }

    #[test]
    fn load_returns_body_and_resource_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        write(
            &d.join("repo/.claude/skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: d\n---\n\nUse forms.md\n",
        );
        write(&d.join("repo/.claude/skills/pdf/forms.md"), "f");
        write(&d.join("repo/.claude/skills/pdf/scripts/fill.py"), "p");
        write(&d.join("repo/.claude/skills/pdf/.hidden"), "h");
        let found = discover(&roots(d));
        let loaded = load(found.find("pdf").expect("found")).expect("loads");
        assert_eq!(loaded.body, "Use forms.md\n");
        assert_eq!(loaded.files, ["forms.md", "scripts/fill.py"]);
        assert!(!loaded.more_files);
    }

    #[test]
    fn prompt_block_lists_name_and_description() {
        assert_eq!(prompt_block(&[]), None);
        let block = prompt_block(&[Skill {
            name: "pdf".into(),
            description: "Fill PDF forms".into(),
            dir: PathBuf::from("/x"),
        }])
        .expect("a block");
        assert!(block.contains("<name>pdf</name>\n    <description>Fill PDF forms</description>"));
    }

    /// The blind review of #28: a project's SKILL.md (or skills folder)
    /// linked outside put the user's file in the prompt. Neither is read.
    #[test]
    fn skills_linked_outside_the_project_are_not_read() {
        let d = tempfile::tempdir().expect("tempdir");
        let (root, home) = (d.path().join("repo"), d.path().join("home"));
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".claude/skills/sk")).unwrap();
        std::fs::create_dir_all(home.join("skd/other")).unwrap();
        std::fs::write(
            home.join("sk.md"),
            "---\ndescription: SECRET-ONE\n---\nbody",
        )
        .unwrap();
        std::fs::write(
            home.join("skd/other/SKILL.md"),
            "---\ndescription: SECRET-TWO\n---\nbody",
        )
        .unwrap();
        std::os::unix::fs::symlink(home.join("sk.md"), root.join(".claude/skills/sk/SKILL.md"))
            .unwrap();
        std::fs::create_dir_all(root.join(".agents")).unwrap();
        std::os::unix::fs::symlink(home.join("skd"), root.join(".agents/skills")).unwrap();
        let found = discover(&SkillRoots {
            cwd: root.clone(),
            root: root.clone(),
            home: None,
            config_dir: None,
        });
        assert!(found.skills.is_empty(), "{found:?}");
        assert_eq!(found.problems.len(), 2, "{:?}", found.problems);
        assert!(
            found
                .problems
                .iter()
                .all(|p| p.contains("links outside the project"))
        );
    }

    #[test]
    fn the_cut_note_names_what_the_list_left_out() {
        let skill = |name: &str, description: String| Skill {
            name: name.to_string(),
            description,
            dir: PathBuf::from(name),
        };
        assert_eq!(cut_note(&[skill("a", "short".into())]), None);
        let mut skills = vec![skill("huge", "x".repeat(20_000))];
        skills.extend((0..80).map(|i| skill(&format!("s{i:02}"), "y".repeat(200))));
        let note = cut_note(&skills).expect("a note");
        assert!(
            note.starts_with("81 skills; description cut at 1024 characters: huge;"),
            "{note}"
        );
        assert!(note.contains("s79") && !note.contains("s00,"), "{note}");
        let block = prompt_block(&skills).expect("a block");
        assert!(block.contains("<more>Also available") && block.contains("s79"));
    }
}
