"""Keys and certificates are written safely: never over an existing CA or key without
``force``, never through a symbolic link, always as a new private (0600) file."""

import stat

import pytest

from shiftlearn.federated.flower import make_certificates, make_node_keys

pytest.importorskip("cryptography")

FILES = ("ca.pem", "ca.key", "server.pem", "server.key")


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_hardening_certificates_refuse_to_overwrite_without_force(tmp_path):
    make_certificates(tmp_path)
    before = {f: (tmp_path / f).read_bytes() for f in FILES}
    with pytest.raises(ValueError, match=r"ca\.pem, ca\.key, server\.pem, server\.key already "
                                         r"exist.*force=True \(the command line's --force\)"):
        make_certificates(tmp_path)
    assert {f: (tmp_path / f).read_bytes() for f in FILES} == before      # nothing written
    (tmp_path / "server.pem").unlink()                      # one left is enough to refuse
    with pytest.raises(ValueError, match="ca.pem, ca.key, server.key already exist"):
        make_certificates(tmp_path)


def test_hardening_force_replaces_a_world_readable_key_with_a_private_one(tmp_path):
    old = tmp_path / "ca.key"
    old.write_bytes(b"old")
    old.chmod(0o644)
    make_certificates(tmp_path, force=True)
    assert old.read_bytes().startswith(b"-----BEGIN PRIVATE KEY")
    assert _mode(old) == 0o600 and _mode(tmp_path / "server.key") == 0o600
    assert _mode(tmp_path / "ca.pem") == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # no temporaries


@pytest.mark.parametrize("force", [False, True])
def test_hardening_a_symbolic_link_is_never_written_through(tmp_path, force):
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"precious")
    out = tmp_path / "tls"
    out.mkdir()
    (out / "server.key").symlink_to(target)
    with pytest.raises(ValueError, match=r"server\.key is a symbolic link"):
        make_certificates(out, force=force)
    assert target.read_bytes() == b"precious"
    assert not (out / "ca.key").exists()                    # refused before anything is written
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "node1.pub").symlink_to(target)
    with pytest.raises(ValueError, match=r"node1\.pub is a symbolic link"):
        make_node_keys(keys, 2, force=force)
    assert target.read_bytes() == b"precious" and not (keys / "node0.key").exists()


def test_hardening_node_keys_refuse_to_overwrite_without_force(tmp_path):
    make_node_keys(tmp_path, 2)
    before = (tmp_path / "node1.key").read_bytes()
    with pytest.raises(ValueError, match=r"node0\.key, node0\.pub, node1\.key, node1\.pub "
                                         "already exist"):
        make_node_keys(tmp_path, 2)
    assert (tmp_path / "node1.key").read_bytes() == before
    keys = make_node_keys(tmp_path, 2, force=True)
    assert keys[1].private_key.read_bytes() != before and _mode(keys[1].private_key) == 0o600


def test_hardening_command_line_names_the_flag(tmp_path, capsys):
    from shiftlearn import cli

    d = str(tmp_path / "tls")
    assert cli.main(["federated", "certs", d]) == 0
    capsys.readouterr()
    assert cli.main(["federated", "certs", d]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--force" in err[0] and "already exist" in err[0]
    assert cli.main(["federated", "certs", d, "--force"]) == 0
    assert cli.main(["federated", "node-keys", str(tmp_path / "k"), "--nodes", "1"]) == 0
    assert cli.main(["federated", "node-keys", str(tmp_path / "k"), "--nodes", "1"]) == 2
    assert "--force" in capsys.readouterr().err
