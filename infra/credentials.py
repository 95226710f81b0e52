"""The secrets a team deployment needs, generated into one private folder:

    python -m infra.credentials DIR [--host NAME ...] [--days N]

    DIR/db-password            PostgreSQL password of the `prefect` role (compose)
    DIR/prefect-auth           `vase:<random>`: PREFECT_SERVER_API_AUTH_STRING / PREFECT_API_AUTH_STRING
    DIR/ca-key.pem             the Dask cluster's CA key: keep it offline; only needed to issue more
    DIR/tls/ca.pem             the CA certificate every Dask process trusts
    DIR/tls/<role>.pem, <role>-key.pem   for role in scheduler, worker, client
    DIR/dask/                  infra/dask/ with its certificate paths pointing at DIR/tls:
                               DASK_CONFIG=DIR/dask for processes run outside the containers

Existing files are kept (a missing certificate is issued from the existing CA), so running it
again is safe. Certificates use ECDSA P-256; the scheduler's and the workers' are good for both ends
of a connection (each serves and connects), the client's for the connecting end only. Dask checks
that a peer's certificate comes from the CA, not host names, so the names given with --host are
only informative. Folders are created private (0700);
the files in them but the CA key are readable (0644) so that the containers' user can read the
copies compose mounts, while nobody else on the host can reach them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import secrets
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

INFRA = Path(__file__).resolve().parent
ROLES = ("scheduler", "worker", "client")
# Which end of a TLS connection each role's certificate may be, checked by OpenSSL on the other end
# (the purpose of a peer's certificate): the scheduler serves and connects to workers, a worker
# serves and connects, a client only connects, so a client's key cannot pose as a scheduler or a
# worker. Dask cannot tell a worker's key from a client's or a scheduler's by anything else: see
# docs/architecture.md, "Dask certificates per role".
ROLE_USAGES = {"scheduler": [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
               "worker": [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
               "client": [ExtendedKeyUsageOID.CLIENT_AUTH]}
HOSTS = ("localhost", "127.0.0.1", "dask-scheduler", "vase-scheduler", "vase-scheduler.vase.svc.cluster.local")


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "vase"), x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def issue_ca(days: int = 3650) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("vase dask CA")).issuer_name(_name("vase dask CA"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def issue(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, role: str, hosts: tuple[str, ...] = HOSTS,
          days: int = 365) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A certificate for `role`, signed by the CA, for the ends of a connection that role takes (`ROLE_USAGES`)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder().subject_name(_name(f"vase dask {role}")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(ROLE_USAGES[role]), critical=True)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _write_new(path: Path, content: bytes, mode: int = 0o644) -> bool:
    """Write `content` to `path` unless it exists; whether it was written."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with path.open("xb") as handle:
            handle.write(content)
    except FileExistsError:
        return False
    path.chmod(mode)
    return True


def write_tls(folder: Path, hosts: tuple[str, ...] = HOSTS, days: int = 365) -> list[Path]:
    """The CA (key in `folder`, certificate in `folder/tls`) and each role's certificate; the files written."""
    tls = folder / "tls"
    ca_key_path, ca_path = folder / "ca-key.pem", tls / "ca.pem"
    written = []
    if ca_path.exists():
        missing = [r for r in ROLES if not (tls / f"{r}.pem").exists() or not (tls / f"{r}-key.pem").exists()]
        if not missing:
            return written
        if not ca_key_path.exists():
            raise FileNotFoundError(f"{ca_key_path} is needed to issue {', '.join(missing)} certificates from {ca_path}")
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        ca_cert = x509.load_pem_x509_certificate(ca_path.read_bytes())
    else:
        ca_key, ca_cert = issue_ca()
        for path, content, mode in [(ca_key_path, _pem(ca_key), 0o600), (ca_path, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)]:
            path.unlink(missing_ok=True)  # a stale half of an older CA
            _write_new(path, content, mode)
            written.append(path)
    for role in ROLES:
        if (tls / f"{role}.pem").exists() and (tls / f"{role}-key.pem").exists():
            continue
        key, cert = issue(ca_key, ca_cert, role, hosts, days)
        for path, content in [(tls / f"{role}-key.pem", _pem(key)), (tls / f"{role}.pem", cert.public_bytes(serialization.Encoding.PEM))]:
            path.unlink(missing_ok=True)
            _write_new(path, content)
            written.append(path)
    return written


def write_dask_config(folder: Path, tls: Path) -> Path:
    """infra/dask/ copied into `folder`, its certificate paths moved from /etc/vase/tls to `tls`."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for source in sorted((INFRA / "dask").glob("*.yaml")):
        text = source.read_text(encoding="utf-8")
        config = yaml.safe_load(text)
        settings = config.get("distributed", {}).get("comm", {}).get("tls")
        if settings:
            settings["ca-file"] = str(tls / Path(settings["ca-file"]).name)
            for role in ROLES:
                settings[role] = {k: str(tls / Path(v).name) for k, v in settings[role].items()}
            text = f"# {source.name} of vase's infra/dask, with the certificates in {tls}\n" + yaml.safe_dump(config, sort_keys=False)
        (folder / source.name).write_text(text, encoding="utf-8")
    return folder


def write_credentials(folder: Path, hosts: tuple[str, ...] = HOSTS, days: int = 365) -> list[Path]:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    written = [p for p, value in [(folder / "db-password", secrets.token_urlsafe(32)),
                                  (folder / "prefect-auth", f"vase:{secrets.token_urlsafe(24)}")]
               if _write_new(p, value.encode())]
    written += write_tls(folder, hosts, days)
    write_dask_config(folder / "dask", (folder / "tls").resolve())
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m infra.credentials", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where the secrets go (kept private: 0700)")
    parser.add_argument("--host", action="append", default=[], help="a further name of the scheduler (repeatable)")
    parser.add_argument("--days", type=int, default=365, help="validity of the scheduler, worker and client certificates")
    args = parser.parse_args(argv)
    written = write_credentials(args.folder, HOSTS + tuple(args.host), args.days)
    for path in written:
        print(f"wrote {path}")
    print(f"{args.folder}: complete ({len(written)} new files); DASK_CONFIG={args.folder / 'dask'} outside containers")


if __name__ == "__main__":
    main()
