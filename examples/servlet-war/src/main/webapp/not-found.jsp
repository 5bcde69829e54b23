<%@ page contentType="text/html; charset=UTF-8" pageEncoding="UTF-8" isErrorPage="true" %>
<!DOCTYPE html>
<html><body><h1>Nothing at ${requestScope['jakarta.servlet.error.request_uri']}</h1></body></html>
