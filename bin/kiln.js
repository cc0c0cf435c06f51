#!/usr/bin/env node
import "../dist/host/cli.js";
