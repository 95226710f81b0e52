"""infra/credentials.py, the secrets a team deployment needs: what each certificate holds (read back with
`cryptography`), the files' modes, the Dask configuration pointing at them, and a second run that keeps
what exists and issues only what is missing."""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import time

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID, NameOID

from infra.credentials import HOSTS, INFRA, ROLES, main, write_credentials, write_dask_config, write_tls

EXTRA_HOSTS = ("db.example.org", "10.1.2.3")


def name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "vase"), x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """A CA's key signs certificates and revocation lists only; a role's key signs its handshakes only."""
    return x509.KeyUsage(digital_signature=not signs_certificates, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=signs_certificates,
                         crl_sign=signs_certificates, encipher_only=False, decipher_only=False)


def extensions(cert: x509.Certificate) -> dict:
    return {e.oid: (e.critical, e.value) for e in cert.extensions}


def certificate(path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def mode(path) -> int:
    return path.stat().st_mode & 0o777


@pytest.fixture
def away_from_utc(monkeypatch):
    """A local time zone five hours behind UTC: a certificate dated by the local clock would start in the future."""
    monkeypatch.setenv("TZ", "EST+05")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_command_issues_a_ca_and_a_certificate_per_role_holding_exactly_their_extensions(tmp_path, capsys, away_from_utc):
    folder = tmp_path / "team" / "secrets"  # its parent does not exist either
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    main([str(folder), "--host", EXTRA_HOSTS[0], "--host", EXTRA_HOSTS[1], "--days", "30"])
    after = dt.datetime.now(dt.UTC)
    tls = folder / "tls"
    files = [folder / "db-password", folder / "prefect-auth", folder / "ca-key.pem", tls / "ca.pem"] + \
        [tls / f"{role}{end}" for role in ROLES for end in ("-key.pem", ".pem")]
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"wrote {path}" for path in files] + \
        [f"{folder}: complete ({len(files)} new files); DASK_CONFIG={folder / 'dask'} outside containers"]
    # token_urlsafe(n) is the unpadded base64 of n random bytes: ceil(4n / 3) characters
    assert len((folder / "db-password").read_text()) == 43  # 32 bytes
    auth = (folder / "prefect-auth").read_text()
    assert auth.startswith("vase:") and len(auth) == len("vase:") + 32  # 24 bytes
    assert [mode(p) for p in (folder, tls, folder / "dask")] == [0o700] * 3
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 if p.name == "ca-key.pem" else 0o644 for p in files}

    ca = certificate(tls / "ca.pem")
    ca_key = serialization.load_pem_private_key((folder / "ca-key.pem").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey) and ca_key.curve.name == "secp256r1"
    assert ca.public_key() == ca_key.public_key()
    assert ca.subject == ca.issuer == name("vase dask CA")
    # valid from five minutes before it was issued (clocks drift), for ten years
    assert before - dt.timedelta(minutes=5) <= ca.not_valid_before_utc <= after - dt.timedelta(minutes=5)
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == dt.timedelta(days=3650, minutes=5)
    assert extensions(ca) == {
        ExtensionOID.BASIC_CONSTRAINTS: (True, x509.BasicConstraints(ca=True, path_length=0)),
        ExtensionOID.KEY_USAGE: (True, key_usage(signs_certificates=True)),
        ExtensionOID.SUBJECT_KEY_IDENTIFIER: (False, x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())),
    }
    names = [x509.IPAddress(ipaddress.ip_address(h)) if h[0].isdigit() else x509.DNSName(h) for h in HOSTS + EXTRA_HOSTS]
    ends = {"scheduler": [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
            "worker": [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
            "client": [ExtendedKeyUsageOID.CLIENT_AUTH]}
    for role in ROLES:
        cert = certificate(tls / f"{role}.pem")
        key = serialization.load_pem_private_key((tls / f"{role}-key.pem").read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1" and cert.public_key() == key.public_key()
        cert.verify_directly_issued_by(ca)
        assert cert.subject == name(f"vase dask {role}") and cert.issuer == ca.subject, role
        assert before - dt.timedelta(minutes=5) <= cert.not_valid_before_utc <= after - dt.timedelta(minutes=5)
        assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(days=30, minutes=5)
        assert extensions(cert) == {
            ExtensionOID.BASIC_CONSTRAINTS: (True, x509.BasicConstraints(ca=False, path_length=None)),
            ExtensionOID.KEY_USAGE: (True, key_usage(signs_certificates=False)),
            ExtensionOID.EXTENDED_KEY_USAGE: (True, x509.ExtendedKeyUsage(ends[role])),
            ExtensionOID.SUBJECT_ALTERNATIVE_NAME: (False, x509.SubjectAlternativeName(names)),
            ExtensionOID.AUTHORITY_KEY_IDENTIFIER: (False, x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())),
        }, role


def test_by_default_certificates_last_a_year_and_name_the_shipped_hosts(tmp_path):
    main([str(tmp_path)])
    for path in [tmp_path / "tls" / f"{role}.pem" for role in ROLES]:
        cert = certificate(path)
        assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(days=365, minutes=5)
        assert len(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value) == len(HOSTS)


def test_the_command_says_what_it_writes_and_what_each_option_means(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # one line per option
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: python -m infra.credentials [-h] [--host HOST] [--days DAYS] folder\n")
    assert "\nThe secrets a team deployment needs, generated into one private folder:\n" in shown
    for option, meaning in [("folder", "where the secrets go (kept private: 0700)"),
                            ("--host HOST", "a further name of the scheduler (repeatable)"),
                            ("--days DAYS", "validity of the scheduler, worker and client certificates")]:
        assert re.search(rf"^  {re.escape(option)} +{re.escape(meaning)}$", shown, re.MULTILINE), option


def test_running_again_keeps_every_file_and_issues_a_missing_certificate_from_the_existing_ca(tmp_path):
    written = write_credentials(tmp_path)
    contents = {p: p.read_bytes() for p in written}
    assert write_credentials(tmp_path) == [] and {p: p.read_bytes() for p in written} == contents
    tls = tmp_path / "tls"
    ca = certificate(tls / "ca.pem")
    for lost in ("worker.pem", "worker-key.pem"):  # either half of a pair gone: the pair is issued again
        (tls / lost).unlink()
        assert write_tls(tmp_path) == [tls / "worker-key.pem", tls / "worker.pem"], lost
        certificate(tls / "worker.pem").verify_directly_issued_by(ca)
        assert certificate(tls / "worker.pem").public_key() == serialization.load_pem_private_key(
            (tls / "worker-key.pem").read_bytes(), password=None).public_key()
        kept = {p: b for p, b in contents.items() if not p.name.startswith("worker")}
        assert {p: p.read_bytes() for p in kept} == kept
    (tmp_path / "ca-key.pem").unlink()
    (tls / "client.pem").unlink()
    (tls / "scheduler-key.pem").unlink()
    with pytest.raises(FileNotFoundError) as refused:
        write_tls(tmp_path)
    assert str(refused.value) == f"{tmp_path / 'ca-key.pem'} is needed to issue scheduler, client certificates from {tls / 'ca.pem'}"


def test_a_folder_without_a_ca_gets_new_certificates_for_every_role(tmp_path):
    folder = tmp_path / "new" / "secrets"
    assert write_tls(folder) == [folder / "ca-key.pem", folder / "tls" / "ca.pem"] + \
        [folder / "tls" / f"{role}{end}" for role in ROLES for end in ("-key.pem", ".pem")]
    assert mode(folder / "tls") == 0o700
    cert = certificate(folder / "tls" / "worker.pem")
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(days=365, minutes=5)  # a year by default


def test_the_dask_configuration_is_infra_dask_with_the_certificates_moved(tmp_path):
    tls = tmp_path / "secrets" / "tls"
    folder = write_dask_config(tmp_path / "a" / "dask", tls)
    assert mode(folder) == 0o700
    shipped = sorted((INFRA / "dask").glob("*.yaml"))
    assert sorted(p.name for p in folder.iterdir()) == [p.name for p in shipped]
    for source in shipped:
        original, copied = yaml.safe_load(source.read_text(encoding="utf-8")), (folder / source.name).read_text(encoding="utf-8")
        settings = original["distributed"].get("comm", {}).get("tls")
        if not settings:  # a file without certificates is copied as it is
            assert copied == source.read_text(encoding="utf-8"), source.name
            continue
        assert copied.startswith(f"# {source.name} of vase's infra/dask, with the certificates in {tls}\n")
        settings["ca-file"] = str(tls / "ca.pem")
        for role in ROLES:
            settings[role] = {"cert": str(tls / f"{role}.pem"), "key": str(tls / f"{role}-key.pem")}
        assert yaml.safe_load(copied) == original
        assert copied.index("require-encryption") < copied.index("default-scheme") < copied.index("min-version")  # the file's order


def test_the_credentials_dask_configuration_points_at_their_own_certificates(tmp_path):
    write_credentials(tmp_path)
    comm = yaml.safe_load((tmp_path / "dask" / "tls.yaml").read_text())["distributed"]["comm"]["tls"]
    assert comm["ca-file"] == str((tmp_path / "tls" / "ca.pem").resolve())
    assert comm["client"]["key"] == str((tmp_path / "tls" / "client-key.pem").resolve())
