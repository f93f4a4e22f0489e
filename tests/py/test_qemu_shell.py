"""pmulab started from the UEFI shell takes its arguments from the shell
(EFI_SHELL_PARAMETERS_PROTOCOL), not from the boot volume's config."""

import os
import subprocess
import tempfile

from pmulab_test import ROOT, run_qemu

QEMU = True


def test_qemu_shell_command_line_reaches_pmulab():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "pmulab.cfg")
        open(cfg, "w").write("info\n--shutdown\n")  # must NOT run: the shell passes arguments
        nsh = os.path.join(td, "startup.nsh")
        open(nsh, "w").write("fs0:\r\n\\pmulab\\app.efi msr read 0x1b --json \"--shutdown\"\r\n")
        img = os.path.join(td, "shell.img")
        # No \EFI\BOOT\BOOTX64.EFI: OVMF falls back to its built-in shell, which runs startup.nsh.
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, os.path.join(ROOT, "build", "pmulab.efi"),
                        cfg, f"{os.path.join(ROOT, 'build', 'pmulab.efi')}=::/pmulab/app.efi",
                        f"{nsh}=::/startup.nsh"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["mdel", "-i", f"{img}@@1M", "::/EFI/BOOT/BOOTX64.EFI"], check=True,
                       env=dict(os.environ, MTOOLS_SKIP_CHECK="1"))
        r = run_qemu(smp=1, image=img, timeout=90)
        assert r.rc == 0, r
        assert r.records() == [{"type": "msr", "op": "read", "cpu": 0, "apic_id": 0, "msr": "0x1b",
                                "value": "0xfee00900"}], r
