"""Item 1, the upload as the contest reads it; and what BOT is (a ZIP as uploaded, its folder,
a start.sh, a jar, or any command), turned into files to copy into a fresh directory per run
plus the command that starts the bot there.

Nothing here runs the bot: every item is read from the files (docs/check.md, item 1).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from check.card import Item, Status
from check.contest import COMPATIBLE_PLATFORMS, PYTHON_VERSIONS, WHEEL_PLATFORM

# Bounds of our own (the contest publishes none): a bot's upload is code and wheels, and a
# ZIP beyond these is a mistake (a virtualenv, a build folder) or a ZIP bomb.
MAX_ZIP_ENTRIES = 20_000
MAX_UNPACKED_BYTES = 1 << 30  # 1 GiB
MAX_COMPRESSION_RATIO = 200  # per entry, above 1 MiB unpacked
START_NAMES = ("start.sh",)
PYTHON_MAINS = ("logic.py", "main.py", "bot.py", "client.py")
ELF_MAGIC = b"\x7fELF"
# Commands that reach for the internet when the bot starts; the contest has none.
NETWORK_COMMANDS = re.compile(
    r"^\s*(?:exec\s+)?(?:sudo\s+)?("
    r"pip3?\s+install(?![^\n]*--no-index)|python3?\s+-m\s+pip\s+install(?![^\n]*--no-index)"
    r"|curl\b|wget\b|apt(?:-get)?\s+install|npm\s+(?:install|ci)\b|git\s+clone"
    r"|gradle\b|mvn\b)",
    re.MULTILINE,
)


class BadInput(Exception):
    """BOT is nothing the check can read (exit status 2)."""


class Unrunnable(Exception):
    """The upload is broken so that nothing can run it: the card ends with the upload's
    items (exit status 1)."""


@dataclass
class BotSource:
    """What to run. `folder` (None for a command) is copied into a fresh directory for every
    run; `command` is then run in that copy (relative names are the copy's files)."""

    kind: str  # "zip", "folder", "start.sh", "jar", "command"
    label: str
    folder: Path | None
    command: list[str]
    main: str | None = None  # the start file, relative to folder
    temporary: list[Path] = field(default_factory=list)

    def cleanup(self) -> None:
        for path in self.temporary:
            shutil.rmtree(path, ignore_errors=True)


def item(key: str, title: str, status: Status, detail: str = "", fix: str = "") -> Item:
    return Item(1, f"upload.{key}", title, status, detail, fix)


# ---- what BOT is ---------------------------------------------------------------------------


def resolve(bot: str, *, main: str | None, python: str, items: list[Item]) -> BotSource:
    """Read BOT; the upload items go to `items`. Raises BadInput."""
    path = Path(bot)
    if path.is_file() and path.suffix.lower() == ".zip":
        unpacked = Path(tempfile.mkdtemp(prefix="piranhas-check-zip-"))
        try:
            modes = check_zip(path, unpacked, items)
        except BaseException:
            shutil.rmtree(unpacked, ignore_errors=True)
            raise
        source = from_folder(
            unpacked,
            main=main,
            python=python,
            items=items,
            kind="zip",
            label=str(path),
            modes=modes,
        )
        source.temporary.append(unpacked)
        return source
    if path.is_dir():
        return from_folder(
            path, main=main, python=python, items=items, kind="folder", label=str(path), modes=None
        )
    if path.is_file() and path.suffix.lower() == ".jar":
        check_jar(path, items)
        return BotSource("jar", str(path), path.parent, ["java", "-jar", path.name], path.name)
    if path.is_file() and (path.suffix == ".sh" or os.access(path, os.X_OK)):
        check_start_file(path, path.name, items, mode=None)
        check_binaries(path.parent, items, only=[path])
        return BotSource("start.sh", str(path), path.parent, [f"./{path.name}"], path.name)
    if path.is_file():
        raise BadInput(f"{bot}: neither a ZIP, a jar nor an executable start file")
    try:
        command = shlex.split(bot)
    except ValueError as error:
        raise BadInput(f"cannot read the command {bot!r}: {error}") from None
    found = shutil.which(command[0]) if command else None
    if found is None:
        raise BadInput(f"{bot}: no such file, folder or command")
    # The bot runs in a fresh directory: a relative program name must not depend on it.
    command[0] = os.path.abspath(found) if os.sep in command[0] else command[0]
    items.append(
        item(
            "kind",
            "What was given",
            Status.SKIP,
            "a command: there is no upload to inspect; items 2-7 run it as given",
        )
    )
    return BotSource("command", bot, None, command)


def from_folder(
    folder: Path,
    *,
    main: str | None,
    python: str,
    items: list[Item],
    kind: str,
    label: str,
    modes: dict[str, int] | None,
) -> BotSource:
    """The start file of an upload folder, and the checks of its files."""
    base = folder
    if main is None:
        main = find_main(folder)
        if main is None:
            entries = [entry for entry in folder.iterdir() if not entry.name.startswith(".")]
            if len(entries) == 1 and entries[0].is_dir() and find_main(entries[0]):
                inner = find_main(entries[0])
                items.append(
                    item(
                        "layout",
                        "Start file at the top of the upload",
                        Status.WARN,
                        f"the start file is {entries[0].name}/{inner}, inside a folder",
                        f"name {entries[0].name}/{inner} as the main file on the upload form, or "
                        "zip the folder's contents rather than the folder",
                    )
                )
                base, main = entries[0], inner
    if main is None:
        items.append(
            item(
                "start-file",
                "A start file",
                Status.FAIL,
                "no start.sh, jar or Python main file (logic.py, main.py) at the top of the upload",
                "put start.sh (or the jar, or the Python main file) at the top level of the ZIP",
            )
        )
        raise Unrunnable(f"{label}: no start file found (give one with --main)")
    start = base / main
    if not start.is_file():
        raise BadInput(f"{label}: the start file {main} does not exist")
    relative_in_zip = str(start.relative_to(folder))
    if main.endswith(".jar"):
        check_jar(start, items)
        command = ["java", "-jar", main]
    elif main.endswith(".py"):
        items.append(
            item(
                "start-file",
                "Start file",
                Status.INFO,
                f"Python main file {main} (the contest's Python image runs it)",
            )
        )
        command = [python, main]
    else:
        mode = None if modes is None else modes.get(relative_in_zip)
        check_start_file(start, main, items, mode=mode, from_zip=modes is not None)
        command = [f"./{main}"]
    check_binaries(base, items)
    check_python(base, items)
    return BotSource(kind, label, base, command, main)


def find_main(folder: Path) -> str | None:
    for name in START_NAMES:
        if (folder / name).is_file():
            return name
    jars = sorted(path.name for path in folder.glob("*.jar"))
    if len(jars) == 1:
        return jars[0]
    for name in PYTHON_MAINS:
        if (folder / name).is_file():
            return name
    return None


# ---- the ZIP -------------------------------------------------------------------------------


def check_zip(path: Path, target: Path, items: list[Item]) -> dict[str, int]:
    """ZIP integrity; unpack into `target` what is safe. The Unix modes of the entries (the
    run bit the contest sees), by name."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        items.append(
            item(
                "zip",
                "ZIP integrity",
                Status.FAIL,
                f"not a readable ZIP: {error}",
                "zip the folder again (zip -r bot.zip .) and upload that file",
            )
        )
        raise Unrunnable(f"{path}: not a readable ZIP ({error})") from None
    problems: list[str] = []
    modes: dict[str, int] = {}
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ZIP_ENTRIES:
            problems.append(f"{len(infos)} entries (our bound: {MAX_ZIP_ENTRIES})")
        total = sum(info.file_size for info in infos)
        if total > MAX_UNPACKED_BYTES:
            problems.append(f"{total >> 20} MiB unpacked (our bound: {MAX_UNPACKED_BYTES >> 20})")
        bad = archive.testzip() if not problems else None
        if bad is not None:
            problems.append(f"{bad}: CRC mismatch (the ZIP is damaged)")
        for info in infos:
            name = info.filename
            pure = PurePosixPath(name.replace("\\", "/"))
            if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
                problems.append(f"{name}: an absolute path")
                continue
            if ".." in pure.parts:
                problems.append(f"{name}: climbs out with ..")
                continue
            if "\\" in name:
                problems.append(
                    f"{name}: backslashes (a Windows zip tool): Linux sees one file name"
                )
            mode = info.external_attr >> 16 if info.create_system == 3 else 0
            if stat.S_ISLNK(mode):
                link = archive.read(info).decode(errors="replace")
                resolved = PurePosixPath(os.path.normpath(str(pure.parent / link)))
                if link.startswith("/") or (resolved.parts[:1] == ("..",)):
                    problems.append(f"{name}: a link out of the upload (to {link})")
                continue  # links are not unpacked: the bot runs from real files only
            if (
                info.file_size > 1 << 20
                and info.compress_size
                and info.file_size / info.compress_size > MAX_COMPRESSION_RATIO
            ):
                problems.append(
                    f"{name}: compressed {info.file_size // info.compress_size}:1 (a ZIP bomb?)"
                )
            modes[str(pure).rstrip("/")] = mode
        if problems:
            items.append(
                item(
                    "zip",
                    "ZIP integrity",
                    Status.FAIL,
                    "; ".join(problems[:10]),
                    "zip the bot's folder from inside it (cd bot && zip -r ../bot.zip .),"
                    " without links, build folders or absolute paths",
                )
            )
            raise Unrunnable(f"{path}: the ZIP is unsafe to unpack ({problems[0]})")
        for info in infos:
            pure = PurePosixPath(info.filename.replace("\\", "/"))
            kept = modes.get(str(pure).rstrip("/"))
            if kept is None:
                continue
            destination = target.joinpath(*pure.parts)
            if info.is_dir():
                destination.mkdir(parents=True, exist_ok=True)
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, destination.open("wb") as out:
                shutil.copyfileobj(source, out)
            destination.chmod(0o755 if kept & 0o111 else 0o644)
    size = f"{total / (1 << 20):.1f} MiB" if total >= 1 << 20 else f"{total / 1024:.0f} KiB"
    items.append(
        item(
            "zip",
            "ZIP integrity",
            Status.PASS,
            f"{len(infos)} entries, {size} unpacked; no absolute paths, no .., no links out",
        )
    )
    return modes


# ---- start file ----------------------------------------------------------------------------


def check_start_file(
    path: Path, name: str, items: list[Item], *, mode: int | None, from_zip: bool = False
) -> None:
    """Interpreter line, run bit, UTF-8, LF, "$@", nothing downloaded at start."""
    data = path.read_bytes()
    if data.startswith(ELF_MAGIC):
        check_elf(path, data, items, main=True)
        executable = (mode if mode is not None else path.stat().st_mode) & 0o111
        items.append(run_bit_item(name, bool(executable), from_zip))
        return
    if data.startswith(b"\xef\xbb\xbf"):
        items.append(
            item(
                "interpreter",
                "Interpreter line",
                Status.FAIL,
                f"{name} starts with a byte order mark: the kernel does not see #!",
                "save it as UTF-8 without BOM",
            )
        )
    elif not data.startswith(b"#!"):
        items.append(
            item(
                "interpreter",
                "Interpreter line",
                Status.FAIL,
                f"{name} has no #! line: the kernel refuses to run it (Exec format error)",
                "make the first line #!/bin/sh",
            )
        )
    else:
        first = data.split(b"\n", 1)[0].rstrip(b"\r").decode(errors="replace")
        interpreter = first[2:].strip().split()
        known = interpreter and (interpreter[0] in ("/bin/sh", "/bin/bash", "/usr/bin/env"))
        items.append(
            item(
                "interpreter",
                "Interpreter line",
                Status.PASS if known else Status.WARN,
                f"{first}",
                "" if known else "the contest's images are sure to have /bin/sh",
            )
        )
    executable = (mode if mode is not None else path.stat().st_mode) & 0o111
    items.append(run_bit_item(name, bool(executable), from_zip))
    try:
        text = data.decode("utf-8")
        items.append(item("utf8", "UTF-8", Status.PASS, f"{name} is valid UTF-8"))
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", errors="replace")
        items.append(
            item(
                "utf8",
                "UTF-8",
                Status.FAIL,
                f"{name} is not UTF-8 (at byte {error.start})",
                "save the file as UTF-8",
            )
        )
    crlf = data.count(b"\r\n")
    if crlf:
        items.append(
            item(
                "crlf",
                "LF line endings",
                Status.FAIL,
                f"{name} has {crlf} CRLF line endings (Windows): the shell looks for "
                "'/bin/sh\\r' and the arguments end in \\r",
                f"convert it: sed -i 's/\\r$//' {name} (or dos2unix; set your editor to LF)",
            )
        )
    else:
        items.append(item("crlf", "LF line endings", Status.PASS, "no CRLF"))
    code = "\n".join(
        line.split("#", 1)[0] if not line.startswith("#!") else "" for line in text.splitlines()
    )
    if '"$@"' in code:
        items.append(
            item("args", 'Passes "$@"', Status.PASS, "the contest's -h/-p/-r reach the bot")
        )
    elif "$@" in code or "$*" in code:
        items.append(
            item(
                "args",
                'Passes "$@"',
                Status.WARN,
                "passes $@ or $* unquoted: fine for the contest's arguments, "
                "breaks on parameters with spaces",
                'write "$@" (with the quotes)',
            )
        )
    else:
        items.append(
            item(
                "args",
                'Passes "$@"',
                Status.FAIL,
                f"{name} never passes its arguments on: the bot does not learn the "
                "server's host, port and its reservation code",
                'end the command with "$@", e.g. exec java -jar bot.jar "$@"',
            )
        )
    found = NETWORK_COMMANDS.search(code)
    if found:
        items.append(
            item(
                "offline",
                "Nothing downloaded at run time",
                Status.FAIL,
                f"{name} runs `{found.group(0).strip()}`: the contest machine has no internet",
                "bundle everything in the ZIP (for Python: pip download the wheels, "
                "install with --no-index --find-links)",
            )
        )
    else:
        items.append(
            item(
                "offline",
                "Nothing downloaded at run time",
                Status.PASS,
                "no pip install, curl, wget, apt, npm or git in the start file",
            )
        )


def run_bit_item(name: str, executable: bool, from_zip: bool) -> Item:
    if executable:
        return item("run-bit", "Run bit", Status.PASS, f"{name} is executable")
    where = "in the ZIP" if from_zip else "on disk"
    return item(
        "run-bit",
        "Run bit",
        Status.FAIL,
        f"{name} is not executable {where}: the contest cannot start it (Permission denied)",
        f"chmod +x {name} and zip it on Linux or macOS (zip keeps the mode); Windows "
        f"zip tools drop it: git update-index --chmod=+x {name} and use git archive",
    )


# ---- binaries ------------------------------------------------------------------------------


def check_binaries(folder: Path, items: list[Item], only: list[Path] | None = None) -> None:
    """Every ELF file in the upload: a 64-bit little-endian x86-64 Linux binary."""
    files = only if only is not None else [p for p in folder.rglob("*") if p.is_file()]
    found = 0
    for path in files[:5000]:
        try:
            with path.open("rb") as handle:
                head = handle.read(64)
        except OSError:
            continue
        if head.startswith(ELF_MAGIC):
            found += 1
            check_elf(path, head, items, main=False, name=str(path.relative_to(folder)))
        elif head[:4] in (b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe") and path.suffix != ".class":
            items.append(
                item(
                    "binary",
                    "Linux binaries",
                    Status.FAIL,
                    f"{path.name} is a macOS (Mach-O) binary",
                    "build it for Linux x86-64",
                )
            )
        elif head[:2] == b"MZ" and path.suffix.lower() in (".exe", ".dll", ""):
            items.append(
                item(
                    "binary",
                    "Linux binaries",
                    Status.FAIL,
                    f"{path.name} is a Windows binary",
                    "build it for Linux x86-64",
                )
            )


def check_elf(path: Path, head: bytes, items: list[Item], *, main: bool, name: str = "") -> None:
    name = name or path.name
    klass, data, osabi = head[4], head[5], head[7]
    machine = int.from_bytes(head[18:20], "little" if data == 1 else "big")
    problems = []
    if klass != 2:
        problems.append("32-bit")
    if data != 1:
        problems.append("big-endian")
    if machine != 62:
        problems.append(f"machine {machine}, not x86-64 (62)")
    if osabi not in (0, 3):
        problems.append(f"OS ABI {osabi}, not Linux")
    if problems:
        items.append(
            item(
                "binary",
                "64-bit Linux binaries",
                Status.FAIL,
                f"{name}: " + ", ".join(problems),
                "build for x86-64 Linux (64-bit); e.g. GOOS=linux GOARCH=amd64, "
                "gcc -m64, or a static musl build",
            )
        )
    elif main:
        items.append(
            item("binary", "64-bit Linux binaries", Status.PASS, f"{name}: ELF 64-bit x86-64")
        )


# ---- jar -----------------------------------------------------------------------------------


def check_jar(path: Path, items: list[Item]) -> None:
    """A runnable fat jar: a manifest with Main-Class, that class inside, no Class-Path to
    jars outside the upload."""
    try:
        with zipfile.ZipFile(path) as jar:
            names = set(jar.namelist())
            manifest = (
                jar.read("META-INF/MANIFEST.MF").decode("utf-8", errors="replace")
                if "META-INF/MANIFEST.MF" in names
                else ""
            )
            attributes = parse_manifest(manifest)
            main_class = attributes.get("Main-Class", "")
            class_file = main_class.replace(".", "/") + ".class"
            version: int | None = None
            if class_file in names:
                head = jar.read(class_file)[:8]
                if head[:4] == b"\xca\xfe\xba\xbe":
                    version = int.from_bytes(head[6:8], "big") - 44
    except (zipfile.BadZipFile, OSError) as error:
        items.append(
            item(
                "jar",
                "Runnable jar",
                Status.FAIL,
                f"{path.name}: not a jar ({error})",
                "build the jar again",
            )
        )
        return
    if not main_class:
        items.append(
            item(
                "jar",
                "Runnable jar",
                Status.FAIL,
                f"{path.name} has no Main-Class in META-INF/MANIFEST.MF: java -jar cannot start it",
                "build a fat jar with Main-Class (jar --create --main-class=Bot ..., "
                "Gradle's shadowJar, Maven's assembly plugin)",
            )
        )
        return
    if class_file not in names:
        items.append(
            item(
                "jar",
                "Runnable jar",
                Status.FAIL,
                f"Main-Class {main_class} is not in {path.name}",
                "build a fat jar that contains the main class and all dependencies",
            )
        )
        return
    class_path = attributes.get("Class-Path", "").split()
    missing = [entry for entry in class_path if not (path.parent / entry).exists()]
    if missing:
        items.append(
            item(
                "jar",
                "Runnable jar",
                Status.FAIL,
                f"Class-Path names files outside the upload: {', '.join(missing)}",
                "build a fat jar (all dependencies inside)",
            )
        )
        return
    needs = (
        f"; compiled for Java {version}: pick a Java image of at least that version"
        if version
        else ""
    )
    items.append(
        item("jar", "Runnable jar", Status.PASS, f"{path.name}: Main-Class {main_class}{needs}")
    )


def parse_manifest(text: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    last = None
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith(" ") and last:
            attributes[last] += line[1:]
        elif ":" in line:
            last, _, value = line.partition(":")
            attributes[last.strip()] = value.strip()
    return attributes


# ---- Python --------------------------------------------------------------------------------

_REQUIREMENT = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(==|>=|<=|~=|>|<|!=)?\s*([^\s;#,]*)"
)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def check_python(folder: Path, items: list[Item]) -> None:
    """requirements.txt and the bundled wheels against the contest's Python images
    (3.10 / 3.12, manylinux2014_x86_64): everything must be inside, nothing downloaded."""
    requirements = folder / "requirements.txt"
    if not requirements.is_file():
        if any(folder.glob("*.py")):
            items.append(
                item(
                    "python",
                    "Python requirements",
                    Status.WARN,
                    "Python files but no requirements.txt",
                    "list socha==<version> and every dependency in requirements.txt",
                )
            )
        return
    wanted: list[tuple[str, str | None]] = []
    for line in requirements.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-")):
            continue
        match = _REQUIREMENT.match(line)
        if match:
            pinned = match.group(3) if match.group(2) == "==" else None
            wanted.append((normalise(match.group(1)), pinned))
    wheels: dict[str, list[tuple[str, str, str, str]]] = {}
    sdists: set[str] = set()
    for path in folder.rglob("*"):
        if path.suffix == ".whl":
            parts = path.name[:-4].split("-")
            if len(parts) >= 5:
                name, version, py, abi, platform = (
                    parts[0],
                    parts[1],
                    parts[-3],
                    parts[-2],
                    parts[-1],
                )
                wheels.setdefault(normalise(name), []).append((version, py, abi, platform))
        elif path.name.endswith((".tar.gz", ".zip")) and "-" in path.name:
            sdists.add(normalise(path.name.rsplit("-", 1)[0]))
    problems, notes = [], []
    if not any(name == "socha" for name, _ in wanted):
        notes.append("no socha in requirements.txt")
    if not wheels:
        problems.append(
            "no wheels bundled: every requirement would be downloaded at start, and "
            "the contest has no internet"
        )
    for name, pinned in wanted:
        candidates = [w for w in wheels.get(name, []) if pinned is None or w[0] == pinned]
        if not candidates:
            extra = " (only a source archive: it would need building)" if name in sdists else ""
            if wheels:
                problems.append(
                    f"{name}{'==' + pinned if pinned else ''}: no wheel in the upload{extra}"
                )
            continue
        for version in PYTHON_VERSIONS:
            if not any(wheel_fits(w, version) for w in candidates):
                tags = ", ".join(sorted({f"{w[1]}-{w[2]}-{w[3]}" for w in candidates}))
                problems.append(
                    f"{name}: no wheel for Python {version} on {WHEEL_PLATFORM} (bundled: {tags})"
                )
    fix = (
        "pip download --only-binary=:all: --platform manylinux2014_x86_64 --python-version "
        "3.12 -r requirements.txt -d packages (the version of the contest image you pick), "
        "and put packages/ into the ZIP"
    )
    versions_ok = [v for v in PYTHON_VERSIONS if not any(f"Python {v}" in p for p in problems)]
    only_versions = all("no wheel for Python" in problem for problem in problems)
    if problems and only_versions and versions_ok:
        # One contest image is enough: wheels for only one of the versions are a warning.
        items.append(
            item(
                "python",
                "Python requirements and wheels",
                Status.WARN,
                "; ".join(problems[:6]) + f"; fine for Python {', '.join(versions_ok)}",
                f"pick the contest's Python {versions_ok[0]} image",
            )
        )
    elif problems:
        items.append(
            item(
                "python",
                "Python requirements and wheels",
                Status.FAIL,
                "; ".join(problems[:6]),
                fix,
            )
        )
    else:
        detail = (
            f"{len(wanted)} requirements, all as wheels for Python "
            f"{' and '.join(PYTHON_VERSIONS)} on {WHEEL_PLATFORM}"
        )
        status = Status.WARN if notes else Status.PASS
        items.append(
            item(
                "python",
                "Python requirements and wheels",
                status,
                "; ".join([detail, *notes]),
                "pin socha==<version> in requirements.txt" if notes else "",
            )
        )


def wheel_fits(wheel: tuple[str, str, str, str], version: str) -> bool:
    """Whether a wheel's tags install on the contest's CPython `version` on its platform."""
    _, py_tags, abi_tags, platforms = wheel
    minor = int(version.split(".")[1])
    if not any(p in COMPATIBLE_PLATFORMS for p in platforms.split(".")):
        return False
    for py in py_tags.split("."):
        if py in ("py3", f"py3{minor}"):
            return True
        if py == f"cp3{minor}":
            return True
        match = re.fullmatch(r"cp3(\d+)", py)
        if match and "abi3" in abi_tags.split(".") and int(match.group(1)) <= minor:
            return True
    return False
