@echo off
rem fleet-dispatch: register the listener (started at your logon, kept alive)
rem and the daily sweep in Task Scheduler, for your account only. No
rem administrator rights needed. Run it again after editing the XML files:
rem /F replaces the tasks.
rem
rem     contrib\windows\install.cmd
rem
rem The binary path is the Command element of the two XML files. The root, key file and
rem machine name come from %APPDATA%\fleet-dispatch\config.toml or from
rem FLEET_DISPATCH_* user environment variables, so the tasks stay one short
rem line: fleet-dispatch listen, fleet-dispatch sweep --all.
rem
rem The plain one-liner below also works (from an administrator prompt, since
rem it makes an any-user logon trigger), but the task gets Task Scheduler's
rem defaults: stopped after 72 hours and on battery, never restarted.
rem     schtasks /Create /F /SC ONLOGON /DELAY 0000:30 /TN fleet-dispatch-listen /TR "\"%USERPROFILE%\.cargo\bin\fleet-dispatch.exe\" listen" /RU "%USERDOMAIN%\%USERNAME%" /IT
setlocal
call :register listen || exit /b 1
call :register sweep || exit /b 1
echo.
echo Registered fleet-dispatch-listen and fleet-dispatch-sweep for %USERDOMAIN%\%USERNAME%.
echo Start the listener now:  schtasks /Run /TN fleet-dispatch-listen
exit /b 0

:register
rem A logon trigger must name its user, so the XML files carry the literal
rem placeholder %USERDOMAIN%\%USERNAME%. Write a copy with your account filled
rem in, as UTF-16 (what schtasks reads), and register that copy.
set "SRC=%~dp0fleet-dispatch-%1.xml"
set "DST=%TEMP%\fleet-dispatch-%1.xml"
powershell -NoProfile -Command "$ErrorActionPreference = 'Stop'; (Get-Content -Raw -LiteralPath $env:SRC).Replace('%%USERDOMAIN%%\%%USERNAME%%', $env:USERDOMAIN + '\' + $env:USERNAME) | Set-Content -Encoding Unicode -LiteralPath $env:DST" || exit /b 1
schtasks /Create /F /TN "fleet-dispatch-%1" /XML "%DST%" || exit /b 1
del "%DST%"
exit /b 0
