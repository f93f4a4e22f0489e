"""pmulab started from the UEFI shell takes its arguments from the shell
(EFI_SHELL_PARAMETERS_PROTOCOL), not from the boot volume's config."""

import tempfile

from pmulab_test import run_qemu, shell_image

QEMU = True


def test_qemu_shell_command_line_reaches_pmulab():
    with tempfile.TemporaryDirectory() as td:
        img = shell_image(td, "fs0:\r\n\\pmulab\\app.efi msr read 0x1b --json \"--shutdown\"\r\n")
        r = run_qemu(smp=1, image=img, timeout=90)
        assert r.rc == 0, r
        meta, *rest = r.records()  # --json: the meta record first (issue #26 item 19)
        assert meta["type"] == "meta" and meta["command_line"] == "msr read 0x1b --json --shutdown", meta
        assert rest == [{"type": "msr", "op": "read", "cpu": 0, "apic_id": 0, "msr": "0x1b",
                         "value": "0xfee00900"}], r
