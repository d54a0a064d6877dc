"""A private certificate authority and SuperNode keys for a small Flower deployment.

:func:`make_certificates` writes what ``flower-superlink --ssl-ca-certfile/--ssl-certfile/
--ssl-keyfile`` needs (``ca.pem``, ``server.pem``, ``server.key``): a self-signed CA and a
server certificate signed by it whose subject alternative names are the hosts the SuperNodes
and the operator dial (``127.0.0.1`` and ``localhost`` for a loopback run; the server's DNS
name or address across machines). SuperNodes pass ``--root-certificates ca.pem`` and the
operator's ``$FLWR_HOME/config.toml`` names it as ``root-certificates``. :func:`make_node_keys`
writes one EC key pair per SuperNode in OpenSSH format, the format Flower 1.41-1.42 reads:
``flower-supernode --auth-supernode-private-key node<i>.key`` and
``flwr supernode register node<i>.pub <connection>`` (the SuperLink runs with
``--enable-supernode-auth``, and refuses every node whose public key was not registered).

Keys are ECDSA on NIST P-384, private keys written unencrypted with mode ``0600``; an
existing file is replaced only with ``force=True`` and never through a symbolic link. Design
notes: ``docs/dev/federated.md``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certificates", "make_certificates", "make_node_keys", "NodeKey"]


@dataclass(frozen=True)
class Certificates:
    """Paths of the PEM files :func:`make_certificates` wrote."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    hosts: tuple[str, ...]

    def superlink_args(self) -> list[str]:
        """``flower-superlink`` arguments that switch TLS on with these files."""
        return ["--ssl-ca-certfile", str(self.ca_cert), "--ssl-certfile",
                str(self.server_cert), "--ssl-keyfile", str(self.server_key)]


@dataclass(frozen=True)
class NodeKey:
    """One SuperNode's key pair (OpenSSH format) as written by :func:`make_node_keys`."""

    private_key: Path
    public_key: Path


def _crypto():
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as exc:  # pragma: no cover - cryptography comes with flwr
        raise ImportError("creating certificates needs the cryptography package, installed "
                          'with the federated extra: pip install "shiftlearn[federated]"'
                          ) from exc
    return x509, hashes, serialization, ec, NameOID, ExtendedKeyUsageOID


def _check_targets(paths: list[Path], force: bool) -> None:
    """Refuse, before anything is written: a symbolic link at any of ``paths`` (a key is never
    written through a link, whatever ``force``), and files that exist unless ``force``."""
    links = [p for p in paths if p.is_symlink()]
    if links:
        raise ValueError(f"{links[0]} is a symbolic link: a key or certificate is never "
                         "written through one (it could point anywhere); remove the link or "
                         "write into another folder.")
    existing = [p.name for p in paths if p.exists()]
    if existing and not force:
        raise ValueError(f"{', '.join(existing)} already exist in {paths[0].parent}: refusing "
                         "to overwrite a certificate authority or key; write into another "
                         "folder, or replace them with force=True (the command line's --force).")


def _write_file(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``path`` with ``mode``: a new file made exclusively beside it, then
    renamed over it (an existing file's mode or a link at the path is never reused)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write_private(path: Path, data: bytes) -> None:
    _write_file(path, data, 0o600)


def _san(hosts):
    x509 = _crypto()[0]
    names = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def make_certificates(directory, hosts=("127.0.0.1", "localhost"), *, days: int = 365,
                      name: str = "shiftlearn federation", force: bool = False) -> Certificates:
    """Create a private CA and a server certificate for ``hosts`` under ``directory``.

    Parameters
    ----------
    directory : path
        Created if missing; ``ca.pem``, ``ca.key``, ``server.pem`` and ``server.key`` are
        written there (keys with mode 0600), each as a new file renamed into place.
    hosts : sequence of str
        Names and IP addresses the SuperLink is reached at (the certificate's subject
        alternative names); a client that dials another name is refused by its TLS check.
    days : int
        Validity of both certificates.
    name : str
        Organisation name written in the certificates.
    force : bool, default=False
        Replace files that exist; without it they are refused.

    Returns
    -------
    Certificates

    Raises
    ------
    ValueError
        No host; ``days < 1``; one of the four files exists (without ``force``) or is a
        symbolic link (always): nothing is written then.

    Examples
    --------
    >>> import tempfile
    >>> from cryptography import x509
    >>> with tempfile.TemporaryDirectory() as d:
    ...     certs = make_certificates(d, hosts=["127.0.0.1", "server.example.org"])
    ...     cert = x509.load_pem_x509_certificate(certs.server_cert.read_bytes())
    ...     san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    ...     sorted(str(v) for v in san.value.get_values_for_type(x509.DNSName))
    ['server.example.org']
    """
    x509, hashes, serialization, ec, NameOID, EKU = _crypto()
    hosts = tuple(str(h) for h in hosts)
    if not hosts or any(not h.strip() for h in hosts):
        raise ValueError("make_certificates needs at least one host name or IP address the "
                         "SuperLink is reached at, e.g. hosts=['server.example.org'] (the command "
                         "line's --host).")
    if int(days) < 1:
        raise ValueError(f"days must be at least 1, got {days}.")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _check_targets([d / "ca.pem", d / "ca.key", d / "server.pem", d / "server.key"], force)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=int(days))

    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
                         x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                            crl_sign=True, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                              critical=False)
               .sign(ca_key, hashes.SHA384()))

    srv_key = ec.generate_private_key(ec.SECP384R1())
    srv_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
                          x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    srv_cert = (x509.CertificateBuilder().subject_name(srv_name).issuer_name(ca_name)
                .public_key(srv_key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                               critical=True)
                .add_extension(_san(hosts), critical=False)
                .add_extension(x509.ExtendedKeyUsage([EKU.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA384()))

    pem = serialization.Encoding.PEM
    pkcs8 = serialization.PrivateFormat.PKCS8
    none = serialization.NoEncryption()
    out = Certificates(d / "ca.pem", d / "ca.key", d / "server.pem", d / "server.key", hosts)
    _write_file(out.ca_cert, ca_cert.public_bytes(pem), 0o644)
    _write_private(out.ca_key, ca_key.private_bytes(pem, pkcs8, none))
    _write_file(out.server_cert, srv_cert.public_bytes(pem), 0o644)
    _write_private(out.server_key, srv_key.private_bytes(pem, pkcs8, none))
    return out


def make_node_keys(directory, n_nodes: int, *, prefix: str = "node",
                   force: bool = False) -> list[NodeKey]:
    """Write ``n_nodes`` SuperNode key pairs ``<prefix><i>.key`` (mode 0600) /
    ``<prefix><i>.pub``, each as a new file renamed into place.

    The private key goes to ``flower-supernode --auth-supernode-private-key`` on node ``i``
    (and nowhere else); the public key to ``flwr supernode register`` by the operator.

    Raises
    ------
    ValueError
        ``n_nodes < 1``; one of the files exists (without ``force``, which replaces them) or
        is a symbolic link (always): nothing is written then.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     keys = make_node_keys(d, 2)
    ...     keys[1].public_key.read_text().split()[0]
    'ecdsa-sha2-nistp384'
    """
    _, _, serialization, ec, _, _ = _crypto()
    if int(n_nodes) < 1:
        raise ValueError(f"n_nodes must be at least 1, got {n_nodes}.")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _check_targets([d / f"{prefix}{i}.{ext}" for i in range(int(n_nodes))
                    for ext in ("key", "pub")], force)
    out = []
    for i in range(int(n_nodes)):
        key = ec.generate_private_key(ec.SECP384R1())
        nk = NodeKey(d / f"{prefix}{i}.key", d / f"{prefix}{i}.pub")
        _write_private(nk.private_key, key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption()))
        _write_file(nk.public_key, key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + b"\n", 0o644)
        out.append(nk)
    return out
