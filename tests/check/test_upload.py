"""Item 1 (check/upload.py): the upload as the contest reads it, from the files alone."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from check.card import Item, Status
from check.upload import BadInput, Unrunnable, resolve, wheel_fits
from tests.check.helpers import SHELL_BOT, shell_variant, zip_folder


def upload_items(bot: Path | str, **options: str) -> dict[str, Item]:
    items: list[Item] = []
    source = resolve(str(bot), main=options.get("main"), python="python3", items=items)
    source.cleanup()
    return {item.key: item for item in items}


def test_the_good_shell_bot_passes_every_upload_item(tmp_path: Path) -> None:
    for bot in (SHELL_BOT, zip_folder(SHELL_BOT, tmp_path / "bot.zip")):
        items = upload_items(bot)
        assert {
            key: item.status for key, item in items.items() if item.status is not Status.PASS
        } == {}
        assert {"upload.interpreter", "upload.run-bit", "upload.crlf", "upload.args"} <= set(items)


@pytest.mark.parametrize(
    ("fault", "key"),
    [("crlf", "upload.crlf"), ("no-run-bit", "upload.run-bit"), ("no-args", "upload.args")],
)
def test_each_broken_start_file_fails_the_item_naming_its_fault(
    tmp_path: Path, fault: str, key: str
) -> None:
    folder = shell_variant(tmp_path, fault)
    for bot in (folder, zip_folder(folder, tmp_path / f"{fault}.zip")):
        items = upload_items(bot)
        failed = {k for k, item in items.items() if item.status is Status.FAIL}
        assert failed == {key}, bot
        assert items[key].fix  # how to fix it


def test_the_run_bit_is_read_from_the_zip_not_from_the_unpacked_files(tmp_path: Path) -> None:
    """A Windows zip tool drops the mode: the contest sees no run bit."""
    archive = zip_folder(SHELL_BOT, tmp_path / "bot.zip", mode=0o644)
    assert upload_items(archive)["upload.run-bit"].status is Status.FAIL


@pytest.mark.parametrize(
    ("name", "why"),
    [("/etc/passwd", "absolute"), ("../outside.sh", "climbs out"), ("a/../../x", "climbs out")],
)
def test_a_zip_with_paths_out_of_the_upload_is_refused_unopened(
    tmp_path: Path, name: str, why: str
) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("start.sh", '#!/bin/sh\nexec true "$@"\n')
        out.writestr(name, "x")
    items: list[Item] = []
    with pytest.raises(Unrunnable):
        resolve(str(archive), main=None, python="python3", items=items)
    assert items[-1].key == "upload.zip" and items[-1].status is Status.FAIL
    assert why in items[-1].detail
    assert not (tmp_path / "outside.sh").exists() and not (tmp_path.parent / "x").exists()


def test_a_link_out_of_the_upload_fails(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("start.sh", '#!/bin/sh\nexec true "$@"\n')
        link = zipfile.ZipInfo("data")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        out.writestr(link, "../../home/user/.ssh")
    items: list[Item] = []
    with pytest.raises(Unrunnable):
        resolve(str(archive), main=None, python="python3", items=items)
    assert "a link out of the upload" in items[-1].detail


def test_a_damaged_zip_is_a_failed_upload(tmp_path: Path) -> None:
    archive = zip_folder(SHELL_BOT, tmp_path / "bot.zip")
    data = bytearray(archive.read_bytes())
    data[60:70] = b"\xff" * 10  # inside the first entry's compressed bytes
    archive.write_bytes(bytes(data))
    items: list[Item] = []
    with pytest.raises(Unrunnable):
        resolve(str(archive), main=None, python="python3", items=items)
    assert items[-1].status is Status.FAIL


def elf(klass: int, machine: int) -> bytes:
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4], header[5], header[7] = klass, 1, 0
    header[18:20] = machine.to_bytes(2, "little")
    return bytes(header)


def test_binaries_must_be_64_bit_linux_x86_64(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "start.sh").write_text('#!/bin/sh\nexec ./bot "$@"\n')
    (folder / "start.sh").chmod(0o755)
    (folder / "bot").write_bytes(elf(1, 3))  # 32-bit i386
    items = upload_items(folder)
    assert items["upload.binary"].status is Status.FAIL
    assert "32-bit" in items["upload.binary"].detail
    (folder / "bot").write_bytes(elf(2, 62))
    assert "upload.binary" not in upload_items(folder)  # fine binaries are not listed


def test_a_jar_needs_a_main_class_that_is_inside(tmp_path: Path) -> None:
    jar = tmp_path / "bot.jar"
    with zipfile.ZipFile(jar, "w") as out:
        out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n")
        out.writestr("Bot.class", b"\xca\xfe\xba\xbe\x00\x00\x00\x3d")
    assert upload_items(jar)["upload.jar"].status is Status.FAIL
    with zipfile.ZipFile(jar, "w") as out:
        out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nMain-Class: Bot\r\n")
        out.writestr("Bot.class", b"\xca\xfe\xba\xbe\x00\x00\x00\x3d")
    item = upload_items(jar)["upload.jar"]
    assert item.status is Status.PASS and "Java 17" in item.detail


def test_network_commands_in_the_start_file_fail(tmp_path: Path) -> None:
    folder = shell_variant(tmp_path, "no-args")
    (folder / "start.sh").write_text(
        '#!/bin/sh\npip install -r requirements.txt\nexec python3 bot.py "$@"\n'
    )
    assert upload_items(folder)["upload.offline"].status is Status.FAIL
    (folder / "start.sh").write_text(
        "#!/bin/sh\npip install --no-index --find-links packages -r requirements.txt\n"
        'exec python3 bot.py "$@"\n'
    )
    assert upload_items(folder)["upload.offline"].status is Status.PASS


def python_upload(root: Path, wheels: list[str]) -> Path:
    """A Python upload whose wheels are empty files with real wheel names: pip chooses a
    wheel by the tags in its name, and so does this check."""
    folder = root / "py"
    (folder / "packages").mkdir(parents=True)
    (folder / "logic.py").write_text("print('bot')\n")
    (folder / "requirements.txt").write_text("socha==4.3.9\nxsdata==22.9\n")
    for name in wheels:
        (folder / "packages" / name).write_bytes(b"")
    return folder


def test_python_requirements_must_all_be_bundled_as_wheels(tmp_path: Path) -> None:
    folder = python_upload(tmp_path, [])
    assert upload_items(folder)["upload.python"].status is Status.FAIL
    (folder / "packages" / "xsdata-22.9-py3-none-any.whl").write_bytes(b"")
    item = upload_items(folder)["upload.python"]
    assert item.status is Status.FAIL and "socha==4.3.9: no wheel" in item.detail


def test_wheels_for_one_contest_python_only_are_a_warning_naming_it(tmp_path: Path) -> None:
    folder = python_upload(
        tmp_path,
        [
            "socha-4.3.9-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "xsdata-22.9-py3-none-any.whl",
        ],
    )
    item = upload_items(folder)["upload.python"]
    assert item.status is Status.WARN
    assert "Python 3.10" in item.detail and "3.12" in item.fix


def test_wheel_tags_against_the_contest_interpreters() -> None:
    assert wheel_fits(("1", "py3", "none", "any"), "3.10")
    assert wheel_fits(("1", "cp310", "cp310", "manylinux2014_x86_64"), "3.10")
    assert not wheel_fits(("1", "cp311", "cp311", "manylinux2014_x86_64"), "3.12")
    assert wheel_fits(("1", "cp38", "abi3", "manylinux_2_17_x86_64"), "3.12")
    assert not wheel_fits(("1", "cp312", "cp312", "macosx_11_0_arm64"), "3.12")
    assert not wheel_fits(("1", "cp312", "cp312", "manylinux_2_28_x86_64"), "3.12")


def test_what_is_no_bot_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput):
        upload_items(tmp_path / "nothing-here")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(BadInput):
        upload_items(tmp_path / "notes.txt")
