"""Drives a command in a pseudo-terminal through a script, for tests of interactive programs.

    python3 pty_driver.py script.json -- node bin/baton.js chat ...

The output goes through a small terminal emulator (cursor moves, erases, scrolling, line wrap), so
steps see the screen a person would see, not the raw bytes. The script is a JSON list of steps:
    {"expect": "regex"}      wait until the screen text (scrollback + screen) at or after the line
                             of the previous match matches; "timeout" seconds (default 20) is only
                             a safety net: the step waits on the text itself
    {"send": "text"}         type these characters ("\r" is Enter, "\u0003" is Ctrl-C)
    {"wait_file": "path"}    wait until the file exists and is not empty
    {"touch": "path"}        create the file (a signal to a command the program runs)
    {"expect_screen": "regex"}  wait until the visible screen (not the scrollback) matches, then keep
                             a copy of it in "screens" (e.g. the status line while a tool runs)
    {"wait_exit": true}      wait for the program to exit
The result is one JSON object on stdout: {"ok", "exit_code", "failed_step", "reason", "transcript", "screens"}.
Python's own pty module is used because python3 is on every machine that runs these tests.
"""
import fcntl
import json
import os
import pty
import re
import select
import struct
import sys
import termios
import time

ROWS, COLS = 30, 120
CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")
OSC = re.compile(r"\x1b\][^\x07]*\x07")


class Terminal:
    def __init__(self):
        self.lines = [[" "] * COLS for _ in range(ROWS)]
        self.scrollback = []
        self.row = self.col = 0
        self.pending_wrap = False
        self.rest = ""

    def feed(self, data):
        text = self.rest + data
        self.rest = ""
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\x1b":
                m = CSI.match(text, i) or OSC.match(text, i)
                if m is None:
                    if len(text) - i < 16:
                        self.rest = text[i:]
                        return
                    i += 1
                    continue
                if m.re is CSI:
                    self.csi(m.group(1), m.group(2))
                i = m.end()
                continue
            if ch == "\r":
                self.col, self.pending_wrap = 0, False
            elif ch == "\n":
                self.pending_wrap = False
                self.linefeed()
            elif ch == "\b":
                self.col, self.pending_wrap = max(0, self.col - 1), False
            elif ord(ch) >= 32:
                self.put(ch)
            i += 1

    def put(self, ch):
        if self.pending_wrap:
            self.col, self.pending_wrap = 0, False
            self.linefeed()
        self.lines[self.row][self.col] = ch
        if self.col == COLS - 1:
            self.pending_wrap = True
        else:
            self.col += 1

    def linefeed(self):
        if self.row == ROWS - 1:
            self.scrollback.append(self.lines.pop(0))
            self.lines.append([" "] * COLS)
        else:
            self.row += 1

    def csi(self, params, final):
        if params.startswith("?"):
            return
        numbers = [int(p) for p in params.split(";") if p.isdigit()]
        n = numbers[0] if numbers else 1
        if final in "ABCDGHJK":
            self.pending_wrap = False
        if final == "A":
            self.row = max(0, self.row - n)
        elif final == "B":
            self.row = min(ROWS - 1, self.row + n)
        elif final == "C":
            self.col = min(COLS - 1, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "G":
            self.col = min(COLS - 1, n - 1)
        elif final == "H":
            self.row = min(ROWS - 1, (numbers[0] if numbers else 1) - 1)
            self.col = min(COLS - 1, (numbers[1] if len(numbers) > 1 else 1) - 1)
        elif final == "J":
            mode = numbers[0] if numbers else 0
            if mode == 0:
                self.lines[self.row][self.col:] = [" "] * (COLS - self.col)
                for r in range(self.row + 1, ROWS):
                    self.lines[r] = [" "] * COLS
            elif mode == 2:
                self.lines = [[" "] * COLS for _ in range(ROWS)]
        elif final == "K":
            self.lines[self.row][self.col:] = [" "] * (COLS - self.col)

    def screen(self):
        return "\n".join("".join(line).rstrip() for line in self.lines).rstrip("\n")

    def text(self):
        rows = ["".join(line).rstrip() for line in self.scrollback + self.lines]
        while rows and rows[-1] == "":
            rows.pop()
        return "\n".join(rows)


def main():
    script = json.load(open(sys.argv[1]))
    command = sys.argv[sys.argv.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    term = Terminal()
    cursor = 0
    exit_code = None
    screens = []

    def pump(timeout):
        nonlocal exit_code
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if chunk:
                term.feed(chunk.decode("utf8", "replace"))
                return True
        if exit_code is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                exit_code = os.waitstatus_to_exitcode(status)
        return False

    def result(ok, failed=None, reason=None):
        while pump(0.05):
            pass
        print(json.dumps({"ok": ok, "exit_code": exit_code, "failed_step": failed, "reason": reason, "transcript": term.text(), "screens": screens}))
        if exit_code is None:
            os.kill(pid, 9)
        sys.exit(0)

    for index, step in enumerate(script):
        deadline = time.time() + step.get("timeout", 20)
        if "send" in step:
            os.write(fd, step["send"].encode("utf8"))
        elif "expect" in step:
            pattern = re.compile(step["expect"])
            while True:
                text = term.text()
                found = pattern.search(text, cursor)
                if found:
                    cursor = text.rfind("\n", 0, found.start()) + 1
                    break
                if time.time() > deadline or (exit_code is not None and not pump(0)):
                    result(False, index, "expected /%s/ after line %d" % (step["expect"], text.count("\n", 0, cursor) + 1))
                pump(0.1)
        elif "wait_file" in step:
            path = step["wait_file"]
            while not (os.path.exists(path) and os.path.getsize(path) > 0):
                if time.time() > deadline:
                    result(False, index, "no file " + path)
                pump(0.05)
        elif "expect_screen" in step:
            pattern = re.compile(step["expect_screen"])
            while not pattern.search(term.screen()):
                if time.time() > deadline:
                    result(False, index, "the screen never matched /%s/:\n%s" % (step["expect_screen"], term.screen()))
                pump(0.05)
            screens.append(term.screen())
        elif "kill" in step:
            # A crash, not a shutdown: SIGKILL leaves no chance to record anything.
            os.kill(pid, 9)
            while exit_code is None:
                if time.time() > deadline:
                    result(False, index, "the program survived SIGKILL")
                pump(0.05)
        elif "touch" in step:
            open(step["touch"], "a").close()
        elif "wait_exit" in step:
            while exit_code is None:
                if time.time() > deadline:
                    result(False, index, "the program did not exit")
                pump(0.1)
    result(True)


main()
